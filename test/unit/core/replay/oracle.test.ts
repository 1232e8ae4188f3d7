// The replay's oracle keeps exactly the pieces the later conversation uses (as the needed-later proxy
// reads it), judged from the pass's position: a use before the pass, or a name the user typed, is none.
import { describe, expect, it } from "vitest";
import { ORACLE_DROP, ORACLE_KEEP, oracleAnswers } from "../../../../src/core/replay/oracle.ts";
import { type LaterMessage, SuspectFinder } from "../../../../src/core/replay/proxy.ts";
import type { BoolQuestion, ClassifierRequest } from "../../../../src/core/shared/types.ts";

const bool: BoolQuestion = { type: "bool", instructions: "", criteria: { true: "needed", false: "not needed" } };
const request: ClassifierRequest = {
  state: {
    items: {
      item_1: { label: "grep", output: "src/payments/ledger_reconcile.ts:12: export function reconcileLedger()" },
      item_2: { label: "ls", output: "docs/old_notes_archive.md" },
    },
  },
  questions: { item_1: bool, item_2: bool },
};

const said = (index: number, role: LaterMessage["role"], text: string): LaterMessage => ({
  index,
  role,
  text,
  calls: [],
});

describe("oracleAnswers", () => {
  const finder = new SuspectFinder([
    said(3, "assistant", "I will look at docs/old_notes_archive.md first"),
    said(20, "assistant", "Now I call reconcileLedger from src/payments/ledger_reconcile.ts"),
  ]);

  it("keeps what a later message uses and drops the rest", () => {
    const answers = oracleAnswers(request, finder, 10);
    expect(answers.item_1).toEqual({ type: "bool", probability: ORACLE_KEEP });
    // Mentioned only before the pass: nothing later needs it.
    expect(answers.item_2).toEqual({ type: "bool", probability: ORACLE_DROP });
  });

  it("judges from the pass's position: after the last use, nothing is needed", () => {
    const answers = oracleAnswers(request, finder, 25);
    expect(answers.item_1).toEqual({ type: "bool", probability: ORACLE_DROP });
  });
});
