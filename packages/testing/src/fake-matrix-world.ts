import { randomBytes } from "node:crypto";
import type { MatrixEventInput } from "./matrix-fixtures.js";

/** An event as the fake homeserver stores it. */
export interface MatrixStoredEvent extends MatrixEventInput {
  event_id: string;
  origin_server_ts: number;
  room_id: string;
}

interface StreamItem {
  pos: number;
  event: MatrixStoredEvent;
  /** The sender's transaction id, echoed back in `unsigned.transaction_id` to the sender only. */
  txnId?: string | undefined;
}

interface FakeRoom {
  roomId: string;
  state: Map<string, MatrixStoredEvent>;
  timeline: StreamItem[];
}

/** A room for {@link FakeMatrixHomeserver.createRoom}: its members, name, and whether it is direct or encrypted. */
export interface FakeMatrixRoomOptions {
  /** `m.room.name` (none: clients name the room after its members). */
  name?: string | undefined;
  /** Users who have joined, in order (the first creates the room). */
  members: readonly string[];
  /** Users invited but not joined (invite the bot to test auto-join). */
  invited?: readonly string[] | undefined;
  /** Listed in the bot's `m.direct` account data under the first other member. */
  direct?: boolean | undefined;
  /** Has `m.room.encryption` state (end-to-end encrypted). */
  encrypted?: boolean | undefined;
  /** A fixed room id (default: a fresh mixed-case id on the fake server). */
  roomId?: string | undefined;
}

const stateKeyOf = (type: string, stateKey: string) => `${type}\u0000${stateKey}`;

/** Matrix room and event ids are case-sensitive: the fake's ids mix cases so adapters must keep them as sent. */
export function randomMatrixId(sigil: "$" | "!", length: number): string {
  return sigil + randomBytes(length).toString("base64url").slice(0, length);
}

/**
 * The homeserver's data behind the fake's HTTP API: rooms with state and timelines, one ordered event stream that
 * `/sync` tokens index into, and the bot's account data. Pure bookkeeping, no I/O.
 */
export class FakeMatrixWorld {
  readonly rooms = new Map<string, FakeRoom>();
  readonly accountData = new Map<string, { content: Record<string, unknown>; pos: number }>();
  readonly displayNames = new Map<string, string>();
  pos = 0;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly botUserId: string,
    readonly serverName: string,
  ) {}

  /** Called whenever the stream grows (wakes long-polling `/sync` requests). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed() {
    for (const listener of [...this.listeners]) listener();
  }

  createRoom(options: FakeMatrixRoomOptions): string {
    const roomId = options.roomId ?? `${randomMatrixId("!", 18)}:${this.serverName}`;
    if (this.rooms.has(roomId)) throw new Error(`fake matrix: room ${roomId} exists`);
    const creator = options.members[0] ?? this.botUserId;
    this.rooms.set(roomId, { roomId, state: new Map(), timeline: [] });
    const state = (type: string, stateKey: string, content: Record<string, unknown>, sender = creator) =>
      this.append(roomId, { type, state_key: stateKey, sender, content });
    state("m.room.create", "", { creator, room_version: "10" });
    for (const member of options.members)
      state("m.room.member", member, this.memberContent(member, "join"), member);
    state("m.room.power_levels", "", { users: { [creator]: 100 }, users_default: 0, events_default: 0 });
    state("m.room.join_rules", "", { join_rule: "invite" });
    state("m.room.history_visibility", "", { history_visibility: "shared" });
    if (options.name !== undefined) state("m.room.name", "", { name: options.name });
    if (options.encrypted) state("m.room.encryption", "", { algorithm: "m.megolm.v1.aes-sha2" });
    for (const invitee of options.invited ?? []) {
      state("m.room.member", invitee, {
        ...this.memberContent(invitee, "invite"),
        is_direct: !!options.direct,
      });
    }
    if (options.direct) {
      const other = [...options.members, ...(options.invited ?? [])].find((m) => m !== this.botUserId);
      if (other !== undefined) {
        const current = (this.accountData.get("m.direct")?.content ?? {}) as Record<string, string[]>;
        this.setAccountData("m.direct", { ...current, [other]: [...(current[other] ?? []), roomId] });
      }
    }
    return roomId;
  }

  memberContent(userId: string, membership: string): Record<string, unknown> {
    const displayname = this.displayNames.get(userId);
    return { membership, ...(displayname === undefined ? {} : { displayname }) };
  }

  setAccountData(type: string, content: Record<string, unknown>) {
    this.accountData.set(type, { content, pos: ++this.pos });
    this.changed();
  }

  /** Appends an event to a room's timeline (and state, for state events); returns the stored event. */
  append(roomId: string, input: MatrixEventInput, txnId?: string): MatrixStoredEvent {
    const room = this.rooms.get(roomId);
    if (room === undefined) throw new Error(`fake matrix: no room ${roomId}`);
    const event: MatrixStoredEvent = {
      ...structuredClone(input),
      event_id: input.event_id ?? randomMatrixId("$", 43),
      origin_server_ts: input.origin_server_ts ?? Date.now(),
      room_id: roomId,
    };
    delete event.unsigned;
    const item: StreamItem = { pos: ++this.pos, event, ...(txnId === undefined ? {} : { txnId }) };
    room.timeline.push(item);
    if (event.state_key !== undefined) room.state.set(stateKeyOf(event.type, event.state_key), event);
    this.changed();
    return event;
  }

  membership(roomId: string, userId: string): string | undefined {
    const member = this.rooms.get(roomId)?.state.get(stateKeyOf("m.room.member", userId));
    return member?.content.membership as string | undefined;
  }

  members(roomId: string, membership: string): string[] {
    const room = this.rooms.get(roomId);
    if (room === undefined) return [];
    return [...room.state.values()]
      .filter((e) => e.type === "m.room.member" && e.content.membership === membership)
      .map((e) => e.state_key as string);
  }

  stateEvent(roomId: string, type: string, stateKey: string): MatrixStoredEvent | undefined {
    return this.rooms.get(roomId)?.state.get(stateKeyOf(type, stateKey));
  }

  findEvent(roomId: string, eventId: string): MatrixStoredEvent | undefined {
    return this.rooms.get(roomId)?.timeline.find((i) => i.event.event_id === eventId)?.event;
  }

  /** An event as `/sync` shows it to the bot: no `room_id`, the bot's own transaction id echoed back. */
  private forSync(item: StreamItem): Record<string, unknown> {
    const { room_id: _, ...event } = item.event;
    const unsigned: Record<string, unknown> = { age: Math.max(0, Date.now() - event.origin_server_ts) };
    if (item.txnId !== undefined && event.sender === this.botUserId) unsigned.transaction_id = item.txnId;
    return { ...event, unsigned };
  }

  private summary(roomId: string) {
    const joined = this.members(roomId, "join");
    return {
      "m.joined_member_count": joined.length,
      "m.invited_member_count": this.members(roomId, "invite").length,
      "m.heroes": joined.filter((m) => m !== this.botUserId).slice(0, 5),
    };
  }

  /** The bot's `/sync` response after stream position `since` (`undefined`: an initial sync). */
  sync(since: number | undefined, timelineLimit: number): Record<string, unknown> {
    const after = since ?? 0;
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    for (const room of this.rooms.values()) {
      const membership = this.membership(room.roomId, this.botUserId);
      const own = room.state.get(stateKeyOf("m.room.member", this.botUserId));
      const ownPos = room.timeline.find((i) => i.event === own)?.pos ?? 0;
      if (membership === "invite" && (since === undefined || ownPos > after)) {
        const stripped = ["m.room.create", "m.room.name", "m.room.join_rules", "m.room.encryption"]
          .map((type) => room.state.get(stateKeyOf(type, "")))
          .concat([own, room.state.get(stateKeyOf("m.room.member", own?.sender ?? ""))])
          .filter((e): e is MatrixStoredEvent => e !== undefined)
          .map(({ type, state_key, sender, content }) => ({ type, state_key, sender, content }));
        invite[room.roomId] = { invite_state: { events: stripped } };
        continue;
      }
      if (membership !== "join") continue;
      const fresh = since === undefined || ownPos > after;
      const newer = room.timeline.filter((i) => i.pos > after);
      if (!fresh && newer.length === 0) continue;
      const timeline = (fresh ? room.timeline : newer).slice(fresh ? -timelineLimit : 0);
      const inTimeline = new Set(timeline.map((i) => i.event.event_id));
      const state = fresh
        ? [...room.state.values()]
            .filter((e) => !inTimeline.has(e.event_id))
            .map((e) => this.forSync({ pos: 0, event: e }))
        : [];
      join[room.roomId] = {
        summary: this.summary(room.roomId),
        state: { events: state },
        timeline: {
          events: timeline.map((i) => this.forSync(i)),
          limited: fresh && timeline.length < room.timeline.length,
          prev_batch: `p${timeline[0]?.pos ?? this.pos}`,
        },
        ephemeral: { events: [] },
        account_data: { events: [] },
        unread_notifications: { highlight_count: 0, notification_count: 0 },
      };
    }
    const accountData = [...this.accountData.entries()]
      .filter(([, v]) => since === undefined || v.pos > after)
      .map(([type, v]) => ({ type, content: v.content }));
    return {
      next_batch: String(this.pos),
      account_data: { events: accountData },
      presence: { events: [] },
      to_device: { events: [] },
      device_one_time_keys_count: {},
      rooms: { join, invite, leave: {} },
    };
  }
}
