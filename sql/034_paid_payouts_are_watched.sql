--
-- 034: a paid payout is watched for a while: a bank can still return it.
--
-- "paid" at Stripe means the money left for the bank, not that it arrived:
-- a payout can fail days later (a closed account, a wrong name), and its
-- status becomes "failed".  Until now a paid payout was final and never
-- asked about again: the client stayed debited in MT5, was told "paid",
-- and the money came back to the company unnoticed.  Now a payout that
-- becomes paid is asked about again every payout_recheck seconds until
-- watch_until (payout_paid_watch seconds after it was first seen paid); a
-- failure seen meanwhile is paid -> rejected, with the critical
-- payout_rejected case 018 opens for any rejection (the MT5 debit stands:
-- two people give it back with a correcting credit).
--
-- payout_answered() gains the watch period as a parameter (dropped and
-- made again: the signature changes); payout_check_due() and
-- payout_check_failed() are re-declared with their signatures (a watched
-- payout the provider does not answer about backs off and, after
-- payout_max_lookups, is a payout_no_answer case).  This file holds the
-- three current definitions.
--

ALTER TABLE mt5credit.payout
    ADD COLUMN watch_until timestamptz,
    -- only a payout seen paid is watched
    ADD CONSTRAINT payout_watch_only_when_paid
        CHECK (watch_until IS NULL OR status IN ('paid', 'rejected'));

COMMENT ON COLUMN mt5credit.payout.watch_until IS
    'paid only: asked about again until then, since a bank may still '
    'return it; NULL when not watched (or paid before 034)';

INSERT INTO mt5credit.payout_transition VALUES
    ('paid', 'rejected', 'the bank returned it after it was paid');

CREATE INDEX payout_watched_idx ON mt5credit.payout (next_check_at)
    WHERE status = 'paid' AND watch_until IS NOT NULL;


DROP FUNCTION mt5credit.payout_answered(bigint, integer, text, text, text,
    text, text, text, jsonb, integer);

--
-- The provider's answer about a payout (which must match what we asked,
-- checked by the caller: our reference, amount, currency and destination),
-- from the status the caller saw the payout in.  The provider's status
-- decides: pending and in_transit are accepted, paid is paid, failed and
-- canceled are a rejection: a critical case, since the MT5 debit stands.
-- Seen paid, it is watched for p_watch_seconds (0: not at all), asked
-- again every p_recheck_seconds; a paid payout never goes back to
-- accepted (refused, MC082: nothing recorded).
--
CREATE FUNCTION mt5credit.payout_answered(p_id bigint, p_attempt integer,
    p_from text, p_payout_id text, p_status text, p_failure_code text,
    p_failure_message text, p_sender text, p_detail jsonb,
    p_recheck_seconds integer, p_watch_seconds integer)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p        payout;
    v_to     text;
    v_now    timestamptz := clock_timestamp();
    v_until  timestamptz;
BEGIN
    IF p_from NOT IN ('sending', 'unknown', 'accepted', 'paid') THEN
        RAISE EXCEPTION 'not a state a payout is answered in: %', p_from
            USING ERRCODE = 'MC082';
    END IF;

    v_to := CASE
            WHEN p_status IN ('pending', 'in_transit') THEN 'accepted'
            WHEN p_status = 'paid' THEN 'paid'
            WHEN p_status IN ('failed', 'canceled', 'declined') THEN 'rejected'
            END;
    IF v_to IS NULL THEN
        RAISE EXCEPTION 'payout status "%" is not one we know', p_status
            USING ERRCODE = 'MC082';
    END IF;
    IF p_from = 'paid' AND v_to = 'accepted' THEN
        RAISE EXCEPTION 'payout %: paid, and now "%" at the provider: a paid '
                        'payout does not go back', p_id, p_status
            USING ERRCODE = 'MC082';
    END IF;

    PERFORM set_actor(p_sender, coalesce(p_detail, '{}')
                                || jsonb_build_object('provider_status',
                                                      p_status));

    SELECT * INTO p FROM payout
    WHERE id = p_id AND status = p_from AND attempts = p_attempt
      AND (provider_payout_id IS NULL OR provider_payout_id = p_payout_id)
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'stale';
    END IF;

    -- the watch starts when it is first seen paid, and never moves
    v_until := CASE WHEN v_to <> 'paid' THEN p.watch_until
                    WHEN p_from = 'paid' THEN p.watch_until
                    WHEN p_watch_seconds > 0
                    THEN v_now + make_interval(secs => p_watch_seconds)
                    END;

    UPDATE payout
    SET status = v_to, provider_payout_id = p_payout_id,
        provider_status = p_status,
        failure_code = CASE WHEN v_to = 'rejected'
                            THEN coalesce(p_failure_code, p_status) END,
        failure_message = CASE WHEN v_to = 'rejected'
                               THEN left(p_failure_message, 1000) END,
        lease_expires_at = NULL,
        watch_until = v_until,
        next_check_at = CASE
            WHEN v_to = 'accepted'
                 OR (v_to = 'paid' AND v_until IS NOT NULL
                     AND v_now + make_interval(secs => p_recheck_seconds)
                         < v_until)
            THEN v_now + make_interval(secs => p_recheck_seconds)
            WHEN v_to = 'paid' AND v_until > v_now
            THEN v_until                -- one last look at the end
            END
    WHERE id = p.id
    RETURNING * INTO p;

    IF v_to = 'rejected' THEN
        PERFORM payout_rejected_case(p);
    END IF;
    RETURN CASE WHEN p_from = 'paid' AND v_to = 'rejected' THEN 'returned'
                ELSE v_to END;
END
$$;


--
-- Payouts to look at: unknown ones past their lease and a margin (any
-- send under it has finished), accepted ones due for a status check, and
-- paid ones still watched (034).  Unknown ones first, then whichever has
-- waited longest: a crowd of accepted or watched payouts rechecked every
-- few seconds must not starve a lookup.  Picking sets next_check_at as a
-- short lease of its own.
--
CREATE OR REPLACE FUNCTION mt5credit.payout_check_due(p_provider text,
    p_margin_seconds integer, p_lookup_seconds integer, p_limit integer)
RETURNS SETOF mt5credit.payout_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    FOR v_id IN
        WITH due AS (
            SELECT id FROM payout
            WHERE provider = p_provider
              AND ((status = 'unknown'
                    AND lease_expires_at
                        + make_interval(secs => p_margin_seconds)
                        < clock_timestamp())
                   OR status = 'accepted'
                   OR (status = 'paid' AND next_check_at IS NOT NULL))
              AND (next_check_at IS NULL OR next_check_at <= clock_timestamp())
            ORDER BY status <> 'unknown', next_check_at NULLS FIRST, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE payout p
        SET next_check_at = clock_timestamp()
                            + make_interval(secs => p_lookup_seconds)
        FROM due
        WHERE p.id = due.id
        RETURNING p.id
    LOOP
        RETURN NEXT payout_item_of(v_id);
    END LOOP;
END
$$;


--
-- A look that settled nothing (no complete answer, an answer that does
-- not match, two payouts with our reference): the state stays, the next
-- look backs off, and a person is told after p_max_lookups, or at once
-- for a conflict.  Returns whether a case was opened.  (034: a watched
-- paid payout too.)
--
CREATE OR REPLACE FUNCTION mt5credit.payout_check_failed(p_id bigint,
    p_attempt integer, p_case_kind text, p_why text,
    p_backoff_seconds integer, p_max_lookups integer, p_sender text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p  payout;
BEGIN
    IF p_case_kind NOT IN ('payout_no_answer', 'payout_conflict') THEN
        RAISE EXCEPTION 'not a payout case: %', p_case_kind
            USING ERRCODE = 'MC082';
    END IF;

    UPDATE payout
    SET lookups = lookups + 1,
        next_check_at = clock_timestamp()
                        + least(make_interval(secs => p_backoff_seconds)
                                * 2 ^ least(lookups, 16),
                                interval '1 day')
    WHERE id = p_id AND attempts = p_attempt
      AND (status IN ('unknown', 'accepted')
           OR (status = 'paid' AND next_check_at IS NOT NULL))
    RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN false;
    END IF;

    IF p_case_kind = 'payout_no_answer' AND p.lookups < p_max_lookups THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_sender, '{"step": "lookup"}');
    PERFORM open_case(p_case_kind,
        CASE p_case_kind WHEN 'payout_conflict' THEN 'critical'
                         ELSE 'high' END,
        p_case_kind || ':' || p.reference,
        jsonb_build_object('payout', p.reference, 'status', p.status,
                           'lookups', p.lookups, 'last', p_why,
                           'seen_at', clock_timestamp()),
        p.debit_credit_id, NULL, NULL, p.amount_minor, p.currency);
    RETURN true;
END
$$;


REVOKE ALL ON FUNCTION
    mt5credit.payout_answered(bigint, integer, text, text, text, text, text,
                              text, jsonb, integer, integer)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    mt5credit.payout_answered(bigint, integer, text, text, text, text, text,
                              text, jsonb, integer, integer)
    TO mt5credit_worker;
