--
-- 037: after the database went back in time, no new credit or withdrawal
-- takes a number the lost timeline gave out.
--
-- References are the row's number (dep:<id>, wd:<id>, wd_<id>).  A
-- database brought back to an earlier point (029) hands out again the
-- numbers it had given after that point, and MT5 (or the provider) still
-- holds the deals and payouts made under them: a new deposit numbered 6
-- would be credited as dep:6 beside the lost timeline's dep:6 (the same
-- reference twice, two clients' money under one name), and a lookup of
-- it could find the other's deal.  So database_rewound() also moves the
-- two sequences a million numbers past the highest either holds: the
-- lost timeline gave out fewer than that between its last backup and the
-- failure, or the gap is a case for a person anyway.
--
-- One reference is not a row's own number: a withdrawal's debit is
-- "wd:<withdrawal id>", and a withdrawal approved in the lost timeline
-- (its debit made in MT5) comes back prepared, to be approved again.
-- Its new debit would be made a second time.  So every rewind is
-- recorded with the highest withdrawal number it found, and a debit of
-- a withdrawal at or below any such number starts unknown: looked up by
-- its reference before any call (found: done with the lost timeline's
-- deal; absent in a complete answer: made).
--
-- A rewind can lose a credit entirely (made after the snapshot): its
-- kept claim then names a credit the database will never have again, and
-- db_identity() found it "behind" at every round, so every round marked
-- the pending credits for lookup again and nothing new was ever claimed.
-- A worker that handled the rewind rewrites its kept claim at attempt 0
-- (mc_rewind.c); an absent credit kept at attempt 0 is no longer behind:
-- a real claim is always attempt 1 or more.
--
-- database_rewound() and db_identity() (029's) are re-declared here; this
-- file holds their current definitions (what is new is marked 037).
--

CREATE TABLE mt5credit.database_rewind (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                  timestamptz NOT NULL DEFAULT clock_timestamp(),
    noticed_by          text        NOT NULL,
    -- withdrawals numbered up to this may have been debited in the lost
    -- timeline
    withdrawals_upto    bigint      NOT NULL CHECK (withdrawals_upto >= 0),
    detail              jsonb       NOT NULL DEFAULT '{}'
);

COMMENT ON TABLE mt5credit.database_rewind IS
    'Each time a worker found the database gone back in time (029, 037)';

CREATE TRIGGER database_rewind_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.database_rewind
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


CREATE OR REPLACE FUNCTION mt5credit.db_identity(p_credits bigint[],
    p_attempts integer[])
RETURNS TABLE (system_identifier text, timeline integer, behind integer,
               behind_credit bigint, behind_attempts integer)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT (SELECT s.system_identifier::text FROM pg_control_system() s),
           (SELECT c.timeline_id FROM pg_control_checkpoint() c),
           (SELECT count(*)::integer
            FROM unnest(p_credits, p_attempts) f (id, attempts)
            LEFT JOIN mt5_credit c ON c.id = f.id
            -- 037: an absent credit kept at attempt 0 was handled
            WHERE (c.id IS NULL AND f.attempts > 0)
               OR c.attempts < f.attempts),
           b.id, b.attempts
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
        SELECT f.id, coalesce(c.attempts, 0) AS attempts
        FROM unnest(p_credits, p_attempts) f (id, attempts)
        LEFT JOIN mt5_credit c ON c.id = f.id
        WHERE (c.id IS NULL AND f.attempts > 0) OR c.attempts < f.attempts
        ORDER BY f.id LIMIT 1) b ON true
$$;


CREATE OR REPLACE FUNCTION mt5credit.database_rewound(p_worker text,
    p_lease_seconds integer, p_detail jsonb)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n       integer;
    v_credit  bigint;
    v_wd      bigint;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || '{"step": "database_rewound"}');

    -- attempts + 1: the lost timeline may have claimed it (the attempt is
    -- the lease token, so no worker of that timeline can write it now)
    UPDATE mt5_credit
    SET status = 'unknown',
        attempts = attempts + 1,
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL
    WHERE status = 'pending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    -- 037: which withdrawals the lost timeline may have debited
    INSERT INTO database_rewind (noticed_by, withdrawals_upto, detail)
    VALUES (p_worker, coalesce((SELECT max(id) FROM withdrawal), 0),
            coalesce(p_detail, '{}'));

    -- 037: numbers the lost timeline gave out are never given again
    v_credit := setval(pg_get_serial_sequence('mt5credit.mt5_credit', 'id'),
                       greatest((SELECT max(id) FROM mt5_credit), 0)
                       + 1000000);
    v_wd := setval(pg_get_serial_sequence('mt5credit.withdrawal', 'id'),
                   greatest((SELECT max(id) FROM withdrawal), 0) + 1000000);

    PERFORM open_case('database_rewound', 'critical',
                      'database_rewound:' || md5(coalesce(p_detail, '{}')::text
                                                 || clock_timestamp()),
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'credits_to_look_up', v_n,
                                            'next_credit_from', v_credit + 1,
                                            'next_withdrawal_from', v_wd + 1,
                                            'seen_at', clock_timestamp()));
    RETURN v_n;
END
$$;


-- a withdrawal's debit that may have been made before a rewind: looked up
-- by its reference first (pending -> unknown, as 029's rewind does)
CREATE FUNCTION mt5credit.withdrawal_debit_after_rewind()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_detail  text := current_setting('mt5credit.detail', true);
BEGIN
    IF EXISTS (SELECT 1 FROM database_rewind r
               WHERE NEW.withdrawal_id <= r.withdrawals_upto)
    THEN
        -- the approver's transaction: its detail is put back afterwards
        PERFORM set_config('mt5credit.detail',
            (coalesce(nullif(v_detail, ''), '{}')::jsonb
             || jsonb_build_object('step', 'withdrawal debit after a '
                                   'rewind: looked up first'))::text, true);
        UPDATE mt5_credit
        SET status = 'unknown', attempts = attempts + 1,
            lease_expires_at = clock_timestamp(), next_check_at = NULL
        WHERE id = NEW.id AND status = 'pending';
        PERFORM set_config('mt5credit.detail', coalesce(v_detail, ''), true);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_withdrawal_after_rewind
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.kind = 'withdrawal')
    EXECUTE FUNCTION mt5credit.withdrawal_debit_after_rewind();
