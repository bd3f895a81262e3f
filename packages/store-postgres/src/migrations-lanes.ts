// Migrations 5 and 6 (see MIGRATIONS in migrations.ts): the run_end overloads of a cluster's lanes. Part of released
// migrations once shipped: never change them, add a migration instead.

// A run's end fenced by its lane (RunEndUnit.fence): run_end with two more parameters, the lease the run executed
// under and its holder. It refuses the end (ended false, nothing written) while another owner holds that lease, and
// holds the lease row (FOR SHARE) until the end commits, so a takeover waits for it; then it does what migration 2's
// run_end does. An overload: gateways of the previous version keep calling the other one during a rolling upgrade.
export const VERSION_5 = (s: string) => `
CREATE FUNCTION ${s}.run_end(
  space text, p_key text, p_run_id text, p_fence_owner text, p_status text, p_follow_up boolean, p_owner text,
  p_run text, p_reply text, p_delta jsonb,
  p_delivery_id text, p_delivery_key text, p_delivery_session text, p_delivery_run text, p_delivery_status text, p_delivery_next bigint, p_delivery_created bigint,
  p_delivery_lease_owner text, p_delivery_lease_until bigint, p_delivery text, p_lease_name text, p_lease_owner text,
  p_lane_name text, p_lane_owner text,
  OUT declined boolean, OUT ended boolean, OUT entry_put boolean, OUT delivery_created boolean, OUT delivery_data text,
  OUT delivery_lease_owner text, OUT delivery_lease_until bigint
) LANGUAGE plpgsql AS $$
DECLARE
  v_holder text;
BEGIN
  IF p_lane_name IS NOT NULL THEN
    -- The session's lock first, as every unit of the session takes it first.
    PERFORM ${s}.lock_record(space, 's:' || p_key);
    SELECT l.owner INTO v_holder FROM ${s}.leases l WHERE l.name = p_lane_name FOR SHARE;
    IF FOUND AND v_holder IS DISTINCT FROM p_lane_owner THEN
      declined := false;
      ended := false;
      RETURN;
    END IF;
  END IF;
  SELECT r.declined, r.ended, r.entry_put, r.delivery_created, r.delivery_data, r.delivery_lease_owner,
      r.delivery_lease_until
    INTO declined, ended, entry_put, delivery_created, delivery_data, delivery_lease_owner, delivery_lease_until
    FROM ${s}.run_end(space, p_key, p_run_id, p_fence_owner, p_status, p_follow_up, p_owner, p_run, p_reply, p_delta,
      p_delivery_id, p_delivery_key, p_delivery_session, p_delivery_run, p_delivery_status, p_delivery_next,
      p_delivery_created, p_delivery_lease_owner, p_delivery_lease_until, p_delivery, p_lease_name, p_lease_owner) r;
END
$$;
`;

// The lane passing from a run to the next one of its session on the same gateway (RunEndUnit.next): run_end with
// two more parameters, the next run's id and its record as it starts. After migration 5's run_end, and only when that
// ended the run, the next run is recorded as started while it is still queued and the fence owner's (as its own
// start would be, fenced the same way); the end also answers the session's entry as it left it, so the next run
// reads neither, and the reply's sequence number, so the gateway knows its transcript's tail. An overload again,
// for rolling upgrades.
export const VERSION_6 = (s: string) => `
CREATE FUNCTION ${s}.run_end(
  space text, p_key text, p_run_id text, p_fence_owner text, p_status text, p_follow_up boolean, p_owner text,
  p_run text, p_reply text, p_delta jsonb,
  p_delivery_id text, p_delivery_key text, p_delivery_session text, p_delivery_run text, p_delivery_status text, p_delivery_next bigint, p_delivery_created bigint,
  p_delivery_lease_owner text, p_delivery_lease_until bigint, p_delivery text, p_lease_name text, p_lease_owner text,
  p_lane_name text, p_lane_owner text, p_next_run_id text, p_next_run text,
  OUT declined boolean, OUT ended boolean, OUT entry_put boolean, OUT delivery_created boolean, OUT delivery_data text,
  OUT delivery_lease_owner text, OUT delivery_lease_until bigint, OUT entry_data text, OUT next_started boolean,
  OUT reply_seq bigint
) LANGUAGE plpgsql AS $$
BEGIN
  SELECT r.declined, r.ended, r.entry_put, r.delivery_created, r.delivery_data, r.delivery_lease_owner,
      r.delivery_lease_until
    INTO declined, ended, entry_put, delivery_created, delivery_data, delivery_lease_owner, delivery_lease_until
    FROM ${s}.run_end(space, p_key, p_run_id, p_fence_owner, p_status, p_follow_up, p_owner, p_run, p_reply, p_delta,
      p_delivery_id, p_delivery_key, p_delivery_session, p_delivery_run, p_delivery_status, p_delivery_next,
      p_delivery_created, p_delivery_lease_owner, p_delivery_lease_until, p_delivery, p_lease_name, p_lease_owner,
      p_lane_name, p_lane_owner) r;
  next_started := false;
  IF declined OR NOT ended THEN
    RETURN;
  END IF;
  IF entry_put THEN
    SELECT e.data INTO entry_data FROM ${s}.entries e WHERE e.key = p_key;
  END IF;
  IF p_reply IS NOT NULL THEN
    -- The session's lock is held: the counter is the reply's sequence number.
    SELECT t.last_seq INTO reply_seq FROM ${s}.transcripts t WHERE t.session_key = p_key;
  END IF;
  IF p_next_run_id IS NOT NULL THEN
    PERFORM ${s}.lock_record(space, 'r:' || p_next_run_id);
    UPDATE ${s}.runs r SET status = 'running', data = p_next_run
      WHERE r.run_id = p_next_run_id AND r.status = 'queued' AND r.owner IS NOT DISTINCT FROM p_fence_owner;
    next_started := FOUND;
  END IF;
END
$$;
`;
