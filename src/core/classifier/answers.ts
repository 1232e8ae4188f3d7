// Classifier answers are untrusted input: anything that is not a well-formed bool or choice answer with
// finite probabilities in [0, 1] is dropped here, and a missing answer always means "keep".
import { z } from "zod";
import type { Answer } from "../shared/types.ts";

const probability = z.number().finite().min(0).max(1);

const boolAnswer = z.object({ type: z.literal("bool"), probability });
const choiceAnswer = z.object({
  type: z.literal("choice"),
  choice: z.string(),
  probabilities: z.record(z.string(), probability),
  confidence: z.number().finite().optional(),
});
const answer = z.union([boolAnswer, choiceAnswer]);

export function sanitizeAnswers(raw: unknown): Record<string, Answer> {
  const out: Record<string, Answer> = {};
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return out;
  for (const [id, value] of Object.entries(raw as Record<string, unknown>)) {
    const parsed = answer.safeParse(value);
    if (parsed.success) out[id] = parsed.data;
  }
  return out;
}
