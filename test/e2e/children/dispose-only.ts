// A host that uses Pi's SDK as documented: create a session with the guard, prompt, `session.dispose()`,
// return. No session_shutdown is sent. The process must then exit on its own (test/e2e/sdk-dispose.test.ts).
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXTENSION } from "../../kit/fault-session.ts";
import { startLoopbackClassifier } from "../../kit/loopback-classifier.ts";
import { createTestSession } from "../../kit/sdk-session.ts";

const classifier = await startLoopbackClassifier({});
const agentDir = await mkdtemp(join(tmpdir(), "cg-dispose-agent-"));
const configPath = join(agentDir, "guard.json");
await writeFile(configPath, JSON.stringify({ telemetry: false, exchangeBreakEven: false }));
process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
const s = await createTestSession({
  agentDir,
  extensionPaths: [EXTENSION],
  classifierBaseUrl: classifier.baseUrl,
  responses: [
    { toolCalls: [{ name: "bash", arguments: { command: "seq 1 400" } }] },
    "Counted.",
    { toolCalls: [{ name: "bash", arguments: { command: "seq 1 500" } }] },
    "Counted again.",
  ],
});
await s.session.prompt("Count to 400.");
await s.session.prompt("Count to 500.");
s.session.dispose();
await classifier.close();
console.log(
  `disposed; guard records: ${s.session.sessionManager.getEntries().filter((e) => e.type === "custom").length}`,
);
