import { describe, expect, it } from "vitest";
import { buildRunEndRequest, type RunEndRequestInput } from "../../../../src/core/distill/request.ts";
import type { Candidate, Chunk, History, RunSpan } from "../../../../src/core/shared/types.ts";

function span(over: Partial<RunSpan> = {}, history: History = { exchanges: [] }): RunSpan {
  return {
    startIndex: 0,
    promptId: "p1",
    question: "Where is the status badge rendered?",
    answer: "In src/pages/OrdersPage.tsx line 35.",
    notes: "",
    history,
    calls: new Map(),
    ...over,
  };
}

const candidate = (over: Partial<Candidate> = {}): Candidate => ({
  entryId: "r1",
  tool: "bash",
  label: "bash `rg -n status`",
  args: { command: "rg -n status" },
  isError: false,
  text: "…",
  ...over,
});

const chunk = (n: number, text = `text of ${n}`): Chunk => ({
  n,
  start: 0,
  end: text.length,
  text,
  firstLine: n,
  lastLine: n,
});

function input(over: Partial<RunEndRequestInput> = {}): RunEndRequestInput {
  return {
    span: span(),
    candidate: candidate(),
    chunks: [chunk(7), chunk(8), chunk(9)],
    segmentIndex: 0,
    segmentCount: 1,
    totalLines: 412,
    ...over,
  };
}

const history: History = {
  summary: "Earlier the user set up the API.",
  firstRequest: "Build an orders dashboard",
  exchanges: [{ user: "add tests", assistant: "Added 4 tests." }],
};

describe("buildRunEndRequest state", () => {
  it("has exactly the run-end fields in a plain run", () => {
    const req = buildRunEndRequest(input());
    expect(Object.keys(req.state)).toEqual([
      "situation",
      "user_question",
      "final_answer",
      "tool",
      "tool_arguments",
      "output_size",
      "chunks",
    ]);
    expect(req.state.user_question).toBe("Where is the status badge rendered?");
    expect(req.state.final_answer).toBe("In src/pages/OrdersPage.tsx line 35.");
    expect(req.state.tool).toBe("bash");
    expect(req.state.tool_arguments).toBe('{"command":"rg -n status"}');
    expect(req.state.output_size).toBe("412 lines");
    expect(req.state.chunks).toEqual({ chunk_7: "text of 7", chunk_8: "text of 8", chunk_9: "text of 9" });
    expect(req.state.situation).not.toContain("earlier_conversation");
  });

  it("adds notes, tool_status for errors and the part number for several segments", () => {
    const req = buildRunEndRequest(
      input({
        span: span({ notes: "First I ran the tests." }),
        candidate: candidate({ isError: true }),
        segmentIndex: 1,
        segmentCount: 3,
      }),
    );
    expect(req.state.agent_notes_during_the_run).toBe("First I ran the tests.");
    expect(req.state.tool_status).toEqual(expect.stringContaining("failed"));
    expect(req.state.tool_status).toEqual(expect.stringContaining("final_answer"));
    expect(req.state.output_size).toBe("412 lines, part 2 of 3");
  });

  it("leaves out whitespace-only notes", () => {
    const req = buildRunEndRequest(input({ span: span({ notes: " \n " }) }));
    expect(req.state).not.toHaveProperty("agent_notes_during_the_run");
  });

  it("clips question, answer, notes and arguments keeping head and tail", () => {
    const long = (n: number) => `START${"z".repeat(n)}END`;
    const req = buildRunEndRequest(
      input({
        span: span({ question: long(9000), answer: long(9000), notes: long(9000) }),
        candidate: candidate({ args: { command: long(2000) } }),
      }),
    );
    const lengths = ["user_question", "final_answer", "agent_notes_during_the_run", "tool_arguments"].map(
      (k) => (req.state[k] as string).length,
    );
    expect(lengths).toEqual([4000, 6000, 2000, 600]);
    expect(req.state.final_answer).toMatch(/^START[\s\S]*\[…\][\s\S]*END$/);
  });

  it("adds earlier_conversation with empty parts omitted and mentions it in the situation", () => {
    const full = buildRunEndRequest(input({ span: span({}, history) }));
    expect(Object.keys(full.state)[1]).toBe("earlier_conversation");
    expect(full.state.earlier_conversation).toEqual({
      summary: "Earlier the user set up the API.",
      first_request: "Build an orders dashboard",
      recent_exchanges: [{ user: "add tests", assistant: "Added 4 tests." }],
    });
    expect(full.state.situation).toContain("earlier_conversation");

    const onlyExchanges = buildRunEndRequest(input({ span: span({}, { exchanges: history.exchanges }) }));
    expect(onlyExchanges.state.earlier_conversation).toEqual({ recent_exchanges: history.exchanges });
    const onlySummary = buildRunEndRequest(input({ span: span({}, { summary: "s", exchanges: [] }) }));
    expect(onlySummary.state.earlier_conversation).toEqual({ summary: "s" });
  });
});

describe("buildRunEndRequest questions", () => {
  it("asks keep_whole, focus and one bool per chunk of the segment", () => {
    const req = buildRunEndRequest(input());
    expect(Object.keys(req.questions)).toEqual(["keep_whole", "focus", "chunk_7", "chunk_8", "chunk_9"]);
    expect(req.questions.keep_whole?.type).toBe("bool");
    expect(req.questions.chunk_8?.type).toBe("bool");
    expect(Object.keys(req.questions.chunk_8?.criteria ?? {})).toEqual(["true", "false"]);
    const focus = req.questions.focus;
    expect(focus?.type).toBe("choice");
    expect(Object.keys(focus?.criteria ?? {})).toEqual(["whole", "none", "chunk_7", "chunk_8", "chunk_9"]);
    expect(req.questions.chunk_8?.instructions).toContain("chunk_8");
  });

  it("uses the single-run wording without history", () => {
    const req = buildRunEndRequest(input());
    for (const q of Object.values(req.questions)) {
      expect(q.instructions).toContain("final_answer");
      expect(q.instructions).not.toContain("earlier_conversation");
    }
  });

  it("names the ongoing work in earlier_conversation with history", () => {
    const req = buildRunEndRequest(input({ span: span({}, history) }));
    expect(req.questions.keep_whole?.instructions).toContain("ongoing work in earlier_conversation");
    expect(req.questions.focus?.instructions).toContain("ongoing work in earlier_conversation");
    const chunkQ = req.questions.chunk_9?.instructions ?? "";
    expect(chunkQ).toContain("final_answer");
    expect(chunkQ).toContain("earlier_conversation");
    expect(chunkQ).toContain("user_question");
  });

  it("stays compact: small fixed text and a small cost per chunk", () => {
    const size = (count: number) => {
      const chunks = Array.from({ length: count }, (_, i) => chunk(i + 1, ""));
      return JSON.stringify(buildRunEndRequest(input({ chunks, span: span({}, history) }))).length;
    };
    const perChunk = (size(40) - size(1)) / 39;
    expect(size(1) - perChunk).toBeLessThan(2000);
    expect(perChunk).toBeLessThan(400);
  });
});
