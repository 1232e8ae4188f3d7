import { describe, expect, it } from "vitest";
import { loadCatalog, report, scoreAll, smallest } from "../../../../bench/routing-eval.ts";
import { classifyLexical } from "../../../../src/core/classifier/lexical.ts";
import { buildRoutingState, namespaceRequest, skillRequest } from "../../../../src/core/routing/routing.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";

const probability = (answers: ReturnType<typeof classifyLexical>, id: string) =>
  (answers[id] as { probability: number }).probability;

describe("local/lexical answers routing requests", () => {
  const pdf = { name: "pdf-tools", description: "Extract, split and merge PDF files.", body: "Use qpdf to split." };
  const docker = { name: "docker-build", description: "Build container images.", body: "Multi-stage builds." };

  it("loads the skill a request is about and not one it is not about", () => {
    const state = buildRoutingState({ prompt: "Split contract.pdf into single pages", messages: [] }).state;
    const yes = probability(classifyLexical(skillRequest(state, pdf)), "needed");
    const no = probability(classifyLexical(skillRequest(state, docker)), "needed");
    expect(yes).toBeGreaterThanOrEqual(DEFAULT_CONFIG.loadThreshold);
    expect(no).toBeLessThan(DEFAULT_CONFIG.loadThreshold);
  });

  it("surfaces the tool group a request needs", () => {
    const state = buildRoutingState({
      prompt: "Open the staging page in the browser and click login",
      messages: [],
    }).state;
    const batch = namespaceRequest(state, [
      { name: "browser", description: "a headless browser", tools: ["browser_open", "browser_click"] },
      { name: "jira", description: "issue tracker", tools: ["jira_search", "jira_comment"] },
    ]);
    const answers = classifyLexical(batch.request);
    expect(probability(answers, "ns_0")).toBeGreaterThanOrEqual(DEFAULT_CONFIG.loadThreshold);
    expect(probability(answers, "ns_1")).toBeLessThan(DEFAULT_CONFIG.loadThreshold);
  });

  it("the routing eval's smallest size: no wrong load, half the needed skills loaded, a table printed", async () => {
    const catalog = smallest(loadCatalog());
    const r = await scoreAll(catalog, localClassify());
    let hits = 0;
    catalog.prompts.forEach((p, i) => {
      const loads = r.loads[i] ?? [];
      expect(loads.filter((s) => s !== p.skill)).toEqual([]);
      if (p.skill !== null && loads.includes(p.skill)) hits++;
    });
    expect(hits).toBeGreaterThanOrEqual(2);
    const table = report(catalog, r, DEFAULT_CONFIG.loadThreshold, "local/lexical");
    expect(table).toMatch(/^held: needed skill loaded \d+\/\d+/m);
    expect(table.split("\n").filter((l) => /^[a-z0-9-]+ +\d/.test(l))).toHaveLength(3);
  });
});
