import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default is one worker per core less one: a single worker on a 2-core machine, where most e2e
    // files wait on child processes and sockets. Two keep both cores busy; tests assert order, not time.
    maxWorkers: 2,
    // Most tests read the run-end pass's drafts right after the run: the run end waits for it whole.
    // Tests of the hand-over set `settleBudgetMs` in their settings file.
    env: { PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "600000" },
  },
});
