// Counts event-loop turns: a setImmediate chain advances once per turn until stopped.
export function turnCounter(): { readonly turn: number; stop(): void } {
  let turn = 0;
  let spinning = true;
  const spin = () => {
    turn++;
    if (spinning) setImmediate(spin);
  };
  setImmediate(spin);
  return {
    get turn() {
      return turn;
    },
    stop() {
      spinning = false;
    },
  };
}
