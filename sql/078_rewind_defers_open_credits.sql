--
-- 078: a rewind defers every open credit, not only the pending ones.
--
-- A lost timeline's claim may still have its balance call on the way to
-- MT5 (or executing there) when the restored or promoted database is
-- served.  A credit that database holds as unknown (or claimed, then
-- swept to unknown) had a lease long expired, so the resolver looked it
-- up at once, found no deal yet, sent it back to pending, and it was
-- claimed again -- at the very attempt the lost claim had, so that
-- claim's kept line matched the database and showed nothing -- and MT5
-- made both deals (t/29; the chaos soak, t/85, found it).
--
-- Now an unknown credit moves to its next attempt with a new lease, as a
-- pending one does: no lookup before a lost call has surely ended (its
-- lease, then the settle margin), and a verdict already on its way is
-- refused (it names the old attempt).  A claimed credit keeps its claim
-- at least a lease from now.
--
-- Re-declared, this file holds its current definition:
--   rewind_begin()   (073's)
--

CREATE OR REPLACE FUNCTION mt5credit.rewind_begin(p_worker text,
    p_lease_seconds integer, p_detail jsonb, p_kind text, p_severity text,
    OUT rewind_id bigint, OUT credits integer)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_credit     bigint;
    v_wd         bigint;
    v_lost_from  timestamptz;
    v_asked      integer;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || jsonb_build_object('step', p_kind));

    -- 066: what the database still held ends here; its credits' history
    -- is every change to them
    v_lost_from := coalesce((SELECT h.at FROM credit_history h
                             ORDER BY h.id DESC LIMIT 1),
                            clock_timestamp());

    -- attempts + 1: the lost timeline may have claimed it (the attempt is
    -- the lease token, so no worker of that timeline can write it now);
    -- 066: looked up from the lost timeline's start
    UPDATE mt5_credit
    SET status = 'unknown',
        attempts = attempts + 1,
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL,
        look_from = least(coalesce(look_from, v_lost_from), v_lost_from)
    WHERE status IN ('pending', 'unknown');
    GET DIAGNOSTICS credits = ROW_COUNT;

    -- 078: a claim the database still holds may be the lost timeline's
    -- (its call made, or still on its way to MT5): not swept, so not
    -- looked up, before a call of that timeline has surely ended
    UPDATE mt5_credit
    SET lease_expires_at = greatest(lease_expires_at, clock_timestamp()
                              + make_interval(secs => p_lease_seconds))
    WHERE status = 'claimed';

    -- 037: which withdrawals the lost timeline may have debited
    INSERT INTO database_rewind (noticed_by, withdrawals_upto, detail,
                                 lost_from)
    VALUES (p_worker, coalesce((SELECT max(id) FROM withdrawal), 0),
            coalesce(p_detail, '{}'), v_lost_from)
    RETURNING id INTO rewind_id;

    -- 037: numbers the lost timeline gave out are never given again
    -- (corrections and withdrawals are still numbered)
    v_credit := setval(pg_get_serial_sequence('mt5credit.mt5_credit', 'id'),
                       greatest((SELECT max(id) FROM mt5_credit), 0)
                       + 1000000);
    v_wd := setval(pg_get_serial_sequence('mt5credit.withdrawal', 'id'),
                   greatest((SELECT max(id) FROM withdrawal), 0) + 1000000);

    -- 069: the events it acknowledged in the lost timeline, asked for
    v_asked := rewind_recover(rewind_id, v_lost_from, p_worker, p_severity);

    PERFORM open_case(p_kind, p_severity,
                      p_kind || ':' || rewind_id,
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'rewind', rewind_id,
                                            'credits_to_look_up', credits,
                                            'lost_from', v_lost_from,
                                            'backfills_asked', v_asked,
                                            'next_credit_from', v_credit + 1,
                                            'next_withdrawal_from', v_wd + 1,
                                            'seen_at', clock_timestamp()));
END
$$;
