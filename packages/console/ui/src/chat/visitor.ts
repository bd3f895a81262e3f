const STORAGE_KEY = "sessions.webchat.visitor";

/** This browser's visitor id (random, kept in localStorage): the web chat's direct peer id. */
export function visitorId(): string {
  try {
    const known = localStorage.getItem(STORAGE_KEY);
    if (known && /^[a-z0-9-]{8,64}$/.test(known)) return known;
  } catch {
    // No storage: a fresh visitor each load.
  }
  const bytes = new Uint8Array(10);
  crypto.getRandomValues(bytes);
  const id = `web-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  try {
    localStorage.setItem(STORAGE_KEY, id);
  } catch {
    // Not kept: history is per page load.
  }
  return id;
}
