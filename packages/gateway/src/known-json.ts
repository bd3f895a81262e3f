/**
 * Answers that are only sent: a method called for a WebSocket request (`dispatch`'s `wire`) may give a list in its
 * answer as the JSON texts of its elements, made once per record it keeps (a transcript message, a session's row)
 * and reused, instead of objects the frame writer would serialize again. Serializing a `chat.history` page of 50
 * messages was two fifths of the call's time in the gateway, for messages that never change once written.
 */
export class JsonTexts {
  /** `texts[i]` is the JSON text of the list's `i`th element. */
  constructor(readonly texts: readonly string[]) {}

  /** What `JSON.stringify` makes of it anywhere else: the list itself (slower, but the same text). */
  toJSON(): unknown[] {
    return this.texts.map((text) => JSON.parse(text) as unknown);
  }
}

/** A plain record with a `JsonTexts` field (anything else is serialized by `JSON.stringify` in one call). */
function holdsTexts(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return false;
  for (const key in value) if ((value as Record<string, unknown>)[key] instanceof JsonTexts) return true;
  return false;
}

/** `JSON.stringify(payload)`, taking the texts of the `JsonTexts` among its fields as they are. */
export function payloadJson(payload: unknown): string | undefined {
  // Most answers hold no texts: one `JSON.stringify`, not one per field (twice as fast for a small answer).
  if (!holdsTexts(payload)) return JSON.stringify(payload);
  let out = "";
  for (const key of Object.keys(payload)) {
    const value = payload[key];
    const text = value instanceof JsonTexts ? `[${value.texts.join(",")}]` : JSON.stringify(value);
    // As JSON.stringify in an object: a field with no JSON form is left out.
    if (text === undefined) continue;
    out += `${out === "" ? "{" : ","}${JSON.stringify(key)}:${text}`;
  }
  return out === "" ? "{}" : `${out}}`;
}
