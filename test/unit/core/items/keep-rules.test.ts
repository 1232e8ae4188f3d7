// Each keep rule on a session built to need it, through the real plan and finish with a classifier that
// drops everything: the rule holds the item, names itself in the record, and lets go when it is off.
import { describe, expect, it } from "vitest";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { type PassPlan, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import { KEEP_RULES, proposesNextSteps, ruleKeeps, saysContinue } from "../../../../src/core/items/keep-rules.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { dropAllAnswer } from "../../../kit/answers.ts";
import { assistantEntry, callResultEntry, toolCall, userEntry } from "../../../kit/snap.ts";

// Every rule, the ones off by default too.
const UNGATED: GuardConfig = {
  ...DEFAULT_CONFIG,
  exchangeBreakEven: false,
  keepRules: [...KEEP_RULES],
  keepReads: false,
};
const code = (n: number, tag = "value") =>
  Array.from({ length: n }, (_, i) => `const ${tag}${i + 1} = compute(${i + 1});`).join("\n");

function pass(entries: SnapEntry[], config: GuardConfig = UNGATED) {
  const plan = planRunEnd(entries, config) as Extract<PassPlan, { status: "run" }>;
  expect(plan.status).toBe("run");
  const texts = plan.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? "");
  return finishPass({ plan, entries, texts, outcomes: plan.requests.map(dropAllAnswer), config });
}

const edited = (out: ReturnType<typeof pass>, id: string) => out.drafts.some((d) => d.targetId === id);
const reasonOf = (out: ReturnType<typeof pass>, id: string) => out.results.find((r) => r.entryId === id)?.reason;

describe("editing: a read of a file the run edits", () => {
  // The edit's oldText is a line the classifier would drop; a second edit could anchor anywhere in the read.
  const read = toolCall("r1", "read", { path: "src/big.ts" });
  const other = toolCall("r2", "read", { path: "src/other.ts" });
  const edit = toolCall("e1", "edit", { path: "src/big.ts", oldText: "const value500 = compute(500);", newText: "x" });
  const entries = [
    userEntry("u", "rename value500 in src/big.ts"),
    assistantEntry("a1", "", [read, other]),
    callResultEntry("t1", read, code(900)),
    callResultEntry("t2", other, code(900, "other")),
    assistantEntry("a2", "", [edit]),
    callResultEntry("t3", edit, "Successfully replaced 1 block(s) in src/big.ts."),
    assistantEntry("z", "Renamed."),
  ];

  it("keeps the edited file's read whole, with the rule as the reason, and distills the other read", () => {
    const out = pass(entries);
    expect(edited(out, "t1")).toBe(false);
    expect(reasonOf(out, "t1")).toBe("keep:editing");
    expect(edited(out, "t2")).toBe(true);
  });

  it("lets the classifier decide with the rules off", () => {
    expect(edited(pass(entries, { ...UNGATED, keepRules: [] }), "t1")).toBe(true);
  });
});

describe("instructions and continues: a skill followed after 'proceed'", () => {
  const skill = toolCall("r1", "read", { path: "skills/deploy/SKILL.md" });
  const probe = toolCall("b1", "bash", { command: "kubectl get pods -A" });
  const run1 = [
    userEntry("u1", "Set up the deploy the way the skill says"),
    assistantEntry("a1", "", [skill, probe]),
    callResultEntry("t1", skill, `# Deploy skill\n${code(600, "step")}`),
    callResultEntry("t2", probe, code(600, "pod")),
  ];

  it("keeps the skill while the task goes on", () => {
    const out = pass([...run1, assistantEntry("z1", "The cluster is reachable. Done with the checks.")]);
    expect(reasonOf(out, "t1")).toBe("keep:instructions");
    expect(edited(out, "t1")).toBe(false);
    expect(edited(out, "t2")).toBe(true);
  });

  it("keeps the run's outputs when the answer proposes next steps", () => {
    const out = pass([...run1, assistantEntry("z1", "Checks pass. Next steps: apply the manifests. Shall I proceed?")]);
    expect(reasonOf(out, "t2")).toBe("keep:continues");
    expect(edited(out, "t2")).toBe(false);
  });

  it("holds the previous run's outputs when the next prompt says to go on", () => {
    const entries = [
      ...run1,
      assistantEntry("z1", "Checked."),
      userEntry("u2", "proceed"),
      assistantEntry("z2", "Applied."),
    ];
    const span = collectRun(entries, 0);
    if (!span) throw new Error("no run");
    expect(ruleKeeps(entries, span, [{ entryId: "t2" }], ["continues"], "run-end").get("t2")).toBe("continues");
    const fresh = [...entries.slice(0, -2), userEntry("u2", "now write the release notes"), assistantEntry("z2", "x")];
    const other = collectRun(fresh, 0);
    if (!other) throw new Error("no run");
    expect(ruleKeeps(fresh, other, [{ entryId: "t2" }], ["continues"], "run-end").size).toBe(0);
  });

  it("tells next steps and go-on prompts from closing words", () => {
    expect(proposesNextSteps("Would you like me to add tests?")).toBe(true);
    expect(proposesNextSteps("All done: the build passes.")).toBe(false);
    expect(saysContinue("ok, continue")).toBe(true);
    expect(saysContinue("Continue with the plan from SKILL.md")).toBe(true);
    expect(saysContinue("what does the config loader do?")).toBe(false);
  });
});

describe("shared-names: an id reused after its exchange was judged unrelated", () => {
  const filler = (id: string, prompt: string) => {
    const call = toolCall(`${id}c`, "bash", { command: `echo ${id}` });
    return [
      userEntry(`${id}u`, prompt),
      assistantEntry(`${id}a`, "", [call]),
      callResultEntry(`${id}r`, call, `${"lorem ipsum dolor ".repeat(150)}`),
      assistantEntry(`${id}z`, "ok"),
    ];
  };
  const list = toolCall("x1", "calendar", { action: "list" });
  const old = [
    userEntry("xu", "List my calendars"),
    assistantEntry("xa", "", [list]),
    callResultEntry(
      "xr",
      list,
      `cal_8f3a2b91c Work\ncal_77d0e4aa2 Family\nendpoint /api/v2/calendars/cal_8f3a2b91c/events\n${"padding line\n".repeat(200)}`,
    ),
    assistantEntry("xz", "You have two calendars: cal_8f3a2b91c (Work) and cal_77d0e4aa2 (Family)."),
  ];
  const event = toolCall("n1", "calendar", { action: "create", calendarId: "cal_8f3a2b91c", also: "cal_77d0e4aa2" });
  const entries = [
    ...old,
    ...filler("f1", "weather?"),
    ...filler("f2", "news?"),
    ...filler("f3", "stocks?"),
    userEntry("nu", "Add lunch on Friday to the work calendar and the family one"),
    assistantEntry("na", "Using /api/v2/calendars/cal_8f3a2b91c/events", [event]),
    callResultEntry("nr", event, "created"),
    assistantEntry("nz", "Added lunch to cal_8f3a2b91c and cal_77d0e4aa2."),
  ];

  it("keeps the old exchange that holds the ids the current run uses", () => {
    const out = pass(entries);
    expect(reasonOf(out, "xu")).toBe("keep:shared-names");
    expect(edited(out, "xu")).toBe(false);
    // An exchange that shares nothing is still omitted.
    expect(edited(out, "f1u")).toBe(true);
  });

  it("omits it with the rules off", () => {
    expect(edited(pass(entries, { ...UNGATED, keepRules: [] }), "xu")).toBe(true);
  });
});
