// Whether the run at the end of a context may hold a recall call, read from Pi's projected entries
// without building the snapshot. Almost no boundary has one, and building the snapshot to find that out
// (recall-signal.ts reads the run from it) walks the whole changed context on Pi's thread at every
// boundary. The answer errs towards yes: it reads back past every user message that may be a steer.

interface EntryLike {
  sourceEntry: { type: string; message?: unknown };
  messages: readonly unknown[];
}

interface MessageLike {
  role?: string;
  content?: unknown;
  stopReason?: string;
}

const callsRecall = (message: unknown): boolean => {
  const content = (message as MessageLike | undefined)?.content;
  if (!Array.isArray(content)) return false;
  return content.some((b) => (b as { type?: string; name?: unknown })?.type === "toolCall" && b.name === "recall");
};

/** An assistant message that asked for no tool (so a user message after it starts a run). */
const endsTurns = (message: MessageLike): boolean =>
  message.role === "assistant" &&
  (!Array.isArray(message.content) || !message.content.some((b) => (b as { type?: string })?.type === "toolCall"));

/**
 * False only when no assistant message since the run's start calls `recall`, as shown or as written.
 * The run starts at the last user message that follows an assistant message asking for no tool (or
 * nothing): an earlier stop would miss a steer's run, a later one only reads more.
 */
export function runMayRecall(context: readonly EntryLike[]): boolean {
  let userAbove = false;
  for (let i = context.length - 1; i >= 0; i--) {
    const entry = context[i] as EntryLike;
    const raw = entry.sourceEntry.type === "message" ? entry.sourceEntry.message : undefined;
    if (raw !== entry.messages[0] && callsRecall(raw)) return true;
    for (let j = entry.messages.length - 1; j >= 0; j--) {
      const m = entry.messages[j] as MessageLike;
      if (callsRecall(m)) return true;
      if (m.role === "system" || m.role === "custom") continue;
      if (userAbove && endsTurns(m)) return false;
      userAbove = m.role === "user";
    }
  }
  return false;
}
