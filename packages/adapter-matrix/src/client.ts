/**
 * The part of matrix-js-sdk the adapter uses, described structurally: a `MatrixClient` from `createClient` fits,
 * and the published types do not depend on matrix-js-sdk's own (which differ between its majors).
 */

/** A `MatrixEvent`. */
export interface MatrixEventLike {
  getId(): string | undefined;
  getType(): string;
  getSender(): string | undefined;
  getRoomId(): string | undefined;
  getTs(): number;
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
  getMember(userId: string): MatrixMemberLike | null;
  getInvitedAndJoinedMemberCount(): number;
  hasEncryptionStateEvent(): boolean;
  /** Present on current matrix-js-sdk rooms: the `m.room.name` state, to tell named rooms from unnamed DMs. */
  currentState?: { getStateEvents(eventType: string, stateKey: string): unknown } | undefined;
}

/** A `MatrixClient` (from `createClient({ baseUrl, accessToken, userId })`). */
export interface MatrixClientLike {
  getUserId(): string | null;
  // biome-ignore lint/suspicious/noExplicitAny: matrix-js-sdk types these by its own event maps.
  getRoom(roomId: any): MatrixRoomLike | null;
  // biome-ignore lint/suspicious/noExplicitAny: keyed by matrix-js-sdk's account data map.
  getAccountData(eventType: any): { getContent(): unknown } | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: matrix-js-sdk's typed emitter.
  on(event: any, listener: any): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: matrix-js-sdk's typed emitter.
  off(event: any, listener: any): unknown;
  joinRoom(roomIdOrAlias: string): Promise<unknown>;
  sendTyping(roomId: string, isTyping: boolean, timeoutMs: number): Promise<unknown>;
  /** The library's authenticated HTTP client: the adapter sends through it with its own transaction ids. */
  readonly http: {
    // biome-ignore lint/suspicious/noExplicitAny: `Method` is an enum in matrix-js-sdk.
    authedRequest(method: any, path: string, queryParams?: any, body?: any): Promise<unknown>;
  };
}

/** matrix-js-sdk's event names (`RoomEvent.Timeline`, `RoomMemberEvent.Membership`), as plain strings. */
export const ROOM_TIMELINE = "Room.timeline";
export const ROOM_MEMBER_MEMBERSHIP = "RoomMember.membership";
