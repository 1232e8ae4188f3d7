// Token counts for the replay's prompt pieces, calibrated on what the session recorded. A Pi session
// writes each request's usage (uncached input, cache read, cache write), whose sum is the exact size of
// the prompt the provider saw. The replay only knows characters, so each piece gets its characters'
// estimate scaled so that every request's total matches the recorded one: the pieces new since the
// previous request share what the prompt grew by, and the first request's excess over its messages is the
// system prompt and tools (which the session file does not hold). A piece keeps its count once assigned,
// so the cache model sees stable blocks. An edited piece (guard on) is its original's count, shrunk by
// the characters it lost or grown by the estimate of those it gained.
import { CHARS_PER_TOKEN } from "../shared/size.ts";

export type PieceKind = "system" | "question" | "toolResult" | "other";

/** One model-visible entry of a request's prompt, in the order the provider sees them. */
export interface Piece {
  /** Entry id ("system" for the system prompt and tools). */
  id: string;
  /** Identity of the content: the id, plus the edit that replaced it. */
  key: string;
  chars: number;
  /** Characters of the entry as recorded (equal to `chars` unless an edit replaced it). */
  origChars: number;
  kind: PieceKind;
  /**
   * Tokens ahead of the piece's own that the recording did not carry (routing's skill catalog and tool
   * schemas in front of the system prompt): priced, never calibrated.
   */
  lead?: number;
}

/** What Pi recorded for one request (tokens; cost in dollars). */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Anthropic: the part of cacheWrite written with the 1-hour retention. */
  cacheWrite1h?: number;
  cost: number;
}

export const SYSTEM_ID = "system";

export const promptTokens = (u: Usage): number => u.input + u.cacheRead + u.cacheWrite;

const estimate = (chars: number) => Math.round(chars / CHARS_PER_TOKEN);

export class TokenCalibrator {
  #tokens = new Map<string, number>();

  /**
   * Tokens of each piece of a guard-off prompt (or of the recorded one, edits and all). With a recorded total, pieces seen for the first time
   * share what the known pieces leave of it; without one (or when the prompt did not grow), estimates.
   */
  off(pieces: readonly Piece[], recorded?: number): number[] {
    return this.offFrom(pieces, 0, 0, recorded);
  }

  /**
   * As `off`, for the pieces from `from` on: every piece before it is known already, `knownBefore` their
   * tokens together (a prompt that grew at its end is calibrated in the time of what is new).
   */
  offFrom(pieces: readonly Piece[], from: number, knownBefore: number, recorded?: number): number[] {
    let known = knownBefore;
    let fresh = 0;
    let system: Piece | undefined;
    for (let i = from; i < pieces.length; i++) {
      const p = pieces[i] as Piece;
      const t = this.#known(p);
      if (t !== undefined) known += t;
      else if (p.kind !== "system") fresh += estimate(p.chars);
      else system ??= p;
    }
    let remaining = recorded === undefined ? fresh : recorded - known;
    if (system) {
      // The system prompt is whatever the first recorded request holds beyond its messages.
      const sys = recorded === undefined ? 0 : Math.max(0, remaining - fresh);
      this.#tokens.set(system.id, sys);
      remaining -= sys;
    }
    const scale = remaining > 0 && fresh > 0 ? remaining / fresh : 1;
    const out: number[] = [];
    for (let i = from; i < pieces.length; i++) {
      const p = pieces[i] as Piece;
      let t = this.#known(p);
      if (t === undefined) {
        // Kept as the entry unedited: the guard-off prompt holds it whole.
        this.#tokens.set(p.id, Math.round(estimate(p.origChars || p.chars) * scale));
        t = this.#known(p) as number;
      }
      out.push(t + (p.lead ?? 0));
    }
    return out;
  }

  /** Tokens of each piece of a guard-on prompt: the off count, scaled by characters for an edited piece. */
  on(pieces: readonly Piece[]): number[] {
    return pieces.map((p) => this.onPiece(p));
  }

  /** Tokens of one piece of a guard-on prompt. */
  onPiece(p: Piece): number {
    return (this.#known(p) ?? estimate(p.chars)) + (p.lead ?? 0);
  }

  /**
   * A known piece's tokens; an edited one's (a recorded prompt may hold edits) shrink with the characters
   * kept and grow only by the estimate of the characters added: a short question's count may hold a
   * growth the host made beside it, which a longer stub in its place must not multiply.
   */
  #known(p: Piece): number | undefined {
    const t = this.#tokens.get(p.id);
    if (t === undefined || p.chars === p.origChars) return t;
    return p.chars < p.origChars ? Math.round((t * p.chars) / p.origChars) : t + estimate(p.chars - p.origChars);
  }
}
