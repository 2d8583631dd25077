--
-- 057: the console replays stored events.
--
-- console_act() (056's) is re-declared here, this file holds its current
-- definition: it also passes an event's replay to event_replay() (039),
-- which runs the stored bytes through ingest's rules under the same
-- unique keys (a payment already credited stays credited once) and
-- records who, when and why.
--
--   {"action": "event_replay", "event": 42, "reason": "the deposit exists now"}
--     -> {"id": <the replay>, "outcome": "credit_created" | ...}
--
-- Backfill is not here: it asks the provider's API, which only the batch
-- program holds a key for (mt5credit backfill, its timer).
--

-- 056's, and a stored event's replay
CREATE OR REPLACE FUNCTION mt5credit.console_act(p jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_action    text := p->>'action';
    v_evidence  jsonb := coalesce(p->'evidence', '[]');
    v_id        bigint;
    v_digest    text;
    v_outcome   text;
BEGIN
    IF jsonb_typeof(p) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'an action is a JSON object' USING ERRCODE = 'MC094';
    END IF;

    IF jsonb_typeof(v_evidence) <> 'array' THEN
        RAISE EXCEPTION 'evidence is a list' USING ERRCODE = 'MC094';
    END IF;

    CASE v_action
    WHEN 'assign' THEN
        PERFORM case_assign((p->>'case')::bigint, p->>'to', p->>'note');

    WHEN 'note' THEN
        PERFORM case_note((p->>'case')::bigint, p->>'note', v_evidence);

    WHEN 'propose' THEN
        v_id := case_propose((p->>'case')::bigint, p->>'proposal_action',
                             (p->>'credit')::bigint, p->>'amount',
                             p->>'note', v_evidence);

    WHEN 'propose_settle_done' THEN
        v_id := case_propose_settle_done((p->>'case')::bigint,
                                         (p->>'credit')::bigint,
                                         (p->>'ticket')::bigint,
                                         p->>'note', v_evidence);

    WHEN 'approve', 'reject', 'withdraw' THEN
        v_id := case_decide((p->>'proposal')::bigint, v_action,
                            p->>'note');

    WHEN 'resolve' THEN
        PERFORM case_resolve((p->>'case')::bigint, p->>'resolution',
                             p->>'note', v_evidence);

    -- a withdrawal: one person prepares (the digest of what they saw),
    -- another approves with that digest (042)
    WHEN 'withdrawal_prepare' THEN
        v_digest := withdrawal_prepare(p->>'withdrawal', p->>'note');

    WHEN 'withdrawal_approve' THEN
        PERFORM withdrawal_approve(p->>'withdrawal', p->>'digest',
                                   p->>'note');

    WHEN 'withdrawal_reject' THEN
        PERFORM withdrawal_reject(p->>'withdrawal', p->>'note');

    -- a stored event through ingest's rules again (039), recorded with
    -- who and why; its outcome is the answer
    WHEN 'event_replay' THEN
        SELECT r.replay_id, r.outcome INTO v_id, v_outcome
        FROM event_replay((p->>'event')::bigint, p->>'reason') r;

    -- the kill switch (046)
    WHEN 'pause' THEN
        v_id := pause_set(p->>'scope', p->>'target', p->>'reason');

    WHEN 'resume' THEN
        v_id := pause_resume(p->>'scope', p->>'target', p->>'note');

    ELSE
        RAISE EXCEPTION 'no action "%"', coalesce(v_action, '')
            USING ERRCODE = 'MC094';
    END CASE;

    RETURN jsonb_build_object('action', v_action,
                              'by', console_whoami()->>'person',
                              'id', v_id, 'digest', v_digest,
                              'outcome', v_outcome);
END
$$;
