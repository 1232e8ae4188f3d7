// Skills, peripheral tools and a keyword classifier policy shared by the routing end-to-end tests.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { InlineExtension } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import {
  type AnswerPolicy,
  neutralPolicy,
  type SystemOneRequestBody,
  stateObject,
  type WireAnswer,
} from "./loopback-classifier.ts";

export const SKILLS: Record<string, { description: string; body: string; keyword: RegExp }> = {
  "pdf-tools": {
    description: "Extract, split and merge PDF files.",
    body: "# PDF tools\n\nUse `qpdf --split-pages` to split a document. Never re-encode images.",
    keyword: /\bpdf\b/i,
  },
  "docker-ops": {
    description: "Build and run Docker containers.",
    body: "# Docker\n\nBuild with `docker buildx build`. Tag images with the git sha.",
    keyword: /docker|container/i,
  },
  "k8s-deploy": {
    description: "Deploy services to Kubernetes clusters.",
    body: "# Kubernetes\n\nApply manifests with `kubectl apply -k`. Check rollout status.",
    keyword: /kubernetes|kubectl|cluster/i,
  },
};
const NAMESPACE_KEYWORDS: Record<string, RegExp> = { browser: /browser|web page/i };

/** Scores skills and namespaces by keyword in the latest request; everything else neutrally. */
export const routingPolicy: AnswerPolicy = (body: SystemOneRequestBody) => {
  const state = stateObject(body) as {
    latest_request?: string;
    skill?: { name: string };
    tool_groups?: Record<string, unknown>;
  };
  if (typeof state.latest_request !== "string") return neutralPolicy(body);
  const answers: Record<string, WireAnswer> = {};
  for (const [id, q] of Object.entries(body.questions)) {
    const name = state.skill ? state.skill.name : (/"([^"]+)"/.exec(q.instructions)?.[1] ?? "");
    const re = state.skill ? SKILLS[name]?.keyword : NAMESPACE_KEYWORDS[name];
    answers[id] = { type: "noul", noul: re?.test(state.latest_request) ? 0.93 : 0.04 };
  }
  return answers;
};

export async function writeSkills(agentDir: string): Promise<void> {
  for (const [name, s] of Object.entries(SKILLS)) {
    const dir = join(agentDir, "skills", name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "SKILL.md"), `---\nname: ${name}\ndescription: ${s.description}\n---\n\n${s.body}\n`);
  }
}

/** Peripheral tools, as an MCP server would register them. */
export const browserTools: InlineExtension = (pi) => {
  for (const name of ["browser_open", "browser_click"]) {
    pi.registerTool({
      name,
      label: name,
      description: `${name.replace("_", " ")} a page in the headless browser`,
      parameters: Type.Object({ url: Type.String() }),
      async execute() {
        return { content: [{ type: "text", text: `${name} ok` }], details: {} };
      },
    });
  }
};
