/** The listening half the kit's HTTP fakes share. */
import type { Server } from "node:http";
import type { Socket } from "node:net";

export interface Listening {
  port: number;
  /** Stops listening and destroys the connections still open, so a hanging request ends too. */
  close(): Promise<void>;
}

/** Listens on a free port of 127.0.0.1; `name` says whose server it is in an error. */
export async function listenOnLoopback(server: Server, name: string): Promise<Listening> {
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error(`${name}: no TCP address`);
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        sockets.clear();
      }),
  };
}
