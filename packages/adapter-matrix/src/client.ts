/**
 * The part of matrix-js-sdk the adapter uses, described structurally: a `MatrixClient` from `createClient` fits,
 * and the published types do not depend on matrix-js-sdk's own (which differ between its majors).
 */

/** A `MatrixEvent`. */
export interface MatrixEventLike {
  /** The event id (`$abc…`): the message id of the inbound message, and what edits and redactions point at. */
  getId(): string | undefined;
  /** The event type: the adapter answers `m.room.message` and skips everything else. */
  getType(): string;
  /** The sender's user id (`@alice:example.org`); the bot's own events are skipped. */
  getSender(): string | undefined;
  /** The room the event was sent in (`!abc:example.org`). */
  getRoomId(): string | undefined;
  /** The origin server timestamp, in ms since epoch (compared with `ignoreEventsBefore`). */
  getTs(): number;
  /** The event content (`msgtype`, `body`, `m.relates_to`, …). */
  getContent(): Record<string, unknown>;
  /** The raw event (`redacts` lives here in rooms before version 11). */
  readonly event: { redacts?: string | undefined };
}

/** A `RoomMember`. */
export interface MatrixMemberLike {
  readonly userId: string;
  readonly name: string;
}

/** A `Room`. */
export interface MatrixRoomLike {
  readonly roomId: string;
  readonly name: string;
  /** A member of the room, for the sender's display name; `null` when the client has not loaded them. */
  getMember(userId: string): MatrixMemberLike | null;
  /** Joined plus invited members: a two-member unnamed room counts as a direct chat (`twoMemberRoomsAreDirect`). */
  getInvitedAndJoinedMemberCount(): number;
  /** Whether the room has `m.room.encryption` state: the adapter does not read or send in encrypted rooms. */
  hasEncryptionStateEvent(): boolean;
  /** Present on current matrix-js-sdk rooms: the `m.room.name` state, to tell named rooms from unnamed DMs. */
  currentState?:
    | {
        /** The state event of this type and state key, or `null`/`undefined` when the room has none. */
        getStateEvents(eventType: string, stateKey: string): unknown;
      }
    | undefined;
}

/** A `MatrixClient` (from `createClient({ baseUrl, accessToken, userId })`). */
export interface MatrixClientLike {
  /** The bot's own user id; `createMatrixAdapter` throws `invalid_config` (field `client`) when it is missing. */
  getUserId(): string | null;
  /** A room the client has synced, or `null`. */
  // biome-ignore lint/suspicious/noExplicitAny: matrix-js-sdk types these by its own event maps.
  getRoom(roomId: any): MatrixRoomLike | null;
  /** Account data of one type: the adapter reads `m.direct` to know which rooms are direct chats. */
  // biome-ignore lint/suspicious/noExplicitAny: keyed by matrix-js-sdk's account data map.
  getAccountData(eventType: any):
    | {
        /** The account data content (for `m.direct`: user id → that user's DM room ids). */
        getContent(): unknown;
      }
    | undefined;
  /** Subscribes to a client event (`Room.timeline`, `RoomMember.membership`); `attach` does this. */
  // biome-ignore lint/suspicious/noExplicitAny: matrix-js-sdk's typed emitter.
  on(event: any, listener: any): unknown;
  /** Unsubscribes a listener added with `on`; `detach` does this. */
  // biome-ignore lint/suspicious/noExplicitAny: matrix-js-sdk's typed emitter.
  off(event: any, listener: any): unknown;
  /** Joins a room the bot was invited to (only with `autoJoin`). */
  joinRoom(roomIdOrAlias: string): Promise<unknown>;
  /** Shows or clears "typing…" in a room for `timeoutMs`. */
  sendTyping(roomId: string, isTyping: boolean, timeoutMs: number): Promise<unknown>;
  /** Starts syncing (`adapter.connection` calls it when this gateway takes the bot over). */
  startClient?(options?: { initialSyncLimit?: number | undefined }): Promise<unknown>;
  /** Stops syncing. */
  stopClient?(): unknown;
  /** The library's authenticated HTTP client: the adapter sends through it with its own transaction ids. */
  readonly http: {
    /**
     * Sends an authenticated request to the homeserver's client-server API (`PUT /rooms/{roomId}/send/…` for
     * deliveries) and resolves with the parsed JSON body; rejects with the library's `MatrixError` on an error
     * status.
     */
    // biome-ignore lint/suspicious/noExplicitAny: `Method` is an enum in matrix-js-sdk.
    authedRequest(method: any, path: string, queryParams?: any, body?: any): Promise<unknown>;
  };
}

/** matrix-js-sdk's event names (`RoomEvent.Timeline`, `RoomMemberEvent.Membership`), as plain strings. */
export const ROOM_TIMELINE = "Room.timeline";
export const ROOM_MEMBER_MEMBERSHIP = "RoomMember.membership";
