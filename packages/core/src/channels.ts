/** Channels the spec names. Adapters may bring more; any normalised id is accepted as a channel. */
export const KNOWN_CHANNELS = [
  "whatsapp",
  "telegram",
  "discord",
  "signal",
  "imessage",
  "webchat",
  "slack",
  "internal",
  "unknown",
] as const;

/** A channel id the contract names; adapters may add others. */
export type KnownChannel = (typeof KNOWN_CHANNELS)[number];

/** Built-in channel aliases; adapters add theirs through the `aliases` argument. */
export const DEFAULT_CHANNEL_ALIASES: Readonly<Record<string, string>> = Object.freeze({ tg: "telegram" });

/**
 * Lower-cases and trims a channel id and maps it through the alias map (built-ins plus `aliases`).
 * Returns `undefined` for anything that is not a non-empty string.
 */
export function normalizeChannelId(
  channel: unknown,
  aliases?: Readonly<Record<string, string>>,
): string | undefined {
  if (typeof channel !== "string") return undefined;
  const id = channel.trim().toLowerCase();
  if (id === "") return undefined;
  const mapped =
    aliases !== undefined && Object.hasOwn(aliases, id)
      ? aliases[id]
      : Object.hasOwn(DEFAULT_CHANNEL_ALIASES, id)
        ? DEFAULT_CHANNEL_ALIASES[id]
        : undefined;
  return typeof mapped === "string" ? mapped.trim().toLowerCase() || id : id;
}
