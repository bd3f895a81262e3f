import type { MatrixClientLike } from "./client.js";
import { toSessionsError } from "./errors.js";

/** How long a room the homeserver said is unencrypted is taken to stay so (a room can turn encryption on). */
const CLEAR_ROOM_TTL_MS = 60_000;
/** Rooms remembered as unencrypted at most (the oldest answer is forgotten first). */
const MAX_CLEAR_ROOMS = 10_000;

export interface EncryptionCheck {
  /** Whether `roomId` is end-to-end encrypted; rejects as the adapter's typed error when the homeserver fails. */
  isEncrypted(roomId: string): Promise<boolean>;
}

/**
 * Tells encrypted rooms apart before a delivery. A synced room answers from its state. A gateway that does not run
 * the sync (a standby holding no bot connection) has no rooms, so it asks the homeserver for the room's
 * `m.room.encryption` state: an encrypted answer is kept for good (encryption cannot be turned off), an unencrypted
 * one for a minute.
 */
export function createEncryptionCheck(client: MatrixClientLike): EncryptionCheck {
  const encrypted = new Set<string>();
  const clear = new Map<string, number>();
  return {
    async isEncrypted(roomId) {
      const room = client.getRoom(roomId);
      if (room !== null && room !== undefined) return room.hasEncryptionStateEvent();
      if (encrypted.has(roomId)) return true;
      const checkedAt = clear.get(roomId);
      if (checkedAt !== undefined && Date.now() - checkedAt < CLEAR_ROOM_TTL_MS) return false;
      try {
        await client.http.authedRequest(
          "GET",
          `/rooms/${encodeURIComponent(roomId)}/state/m.room.encryption`,
        );
      } catch (error) {
        const e = (error ?? {}) as { errcode?: unknown; httpStatus?: unknown };
        if (e.errcode !== "M_NOT_FOUND" && e.httpStatus !== 404) throw toSessionsError(error);
        clear.delete(roomId);
        clear.set(roomId, Date.now());
        if (clear.size > MAX_CLEAR_ROOMS) clear.delete(clear.keys().next().value as string);
        return false;
      }
      encrypted.add(roomId);
      clear.delete(roomId);
      return true;
    },
  };
}
