--
-- 022: a deal made under a lost lease is a critical case at once.
--
-- The worker's record of a deal (credit_succeeded, 008) moves a credit
-- only from the state and attempt it claimed.  When it moves nothing, the
-- worker holds a real MT5 ticket that no row may carry: its lease was
-- swept while the call ran, and another worker or the resolver may by
-- now have made or found a deal of its own.  Until today that was a log
-- line; now it is a case, opened in the same breath, with the credit,
-- the orphan ticket and the attempt side by side.
--
--   credit_orphan_deal   a ticket the worker could not record: false if
--                        the credit carries that very ticket (the
--                        resolver got there first), else true, with a
--                        case (one per credit and ticket)
--
-- Nothing here moves money or a credit: a person decides.
--

CREATE FUNCTION mt5credit.credit_orphan_deal(p_id bigint, p_attempt integer,
    p_ticket bigint, p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_credit  mt5_credit%ROWTYPE;
BEGIN
    IF p_ticket IS NULL OR p_ticket <= 0 THEN
        RAISE EXCEPTION 'an orphan deal needs its ticket'
            USING ERRCODE = 'MC022';
    END IF;

    SELECT * INTO v_credit FROM mt5_credit WHERE id = p_id;

    IF NOT FOUND THEN
        RAISE EXCEPTION 'credit % does not exist', p_id
            USING ERRCODE = 'MC022';
    END IF;

    IF v_credit.mt5_deal_ticket = p_ticket THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_worker, p_detail);
    PERFORM open_case('orphan_deal', 'critical',
                      'orphan_deal:credit:' || p_id || ':ticket:' || p_ticket,
                      coalesce(p_detail, '{}'::jsonb)
                      || jsonb_build_object(
                             'orphan_ticket', p_ticket,
                             'attempt', p_attempt,
                             'credit_status', v_credit.status,
                             'credit_attempts', v_credit.attempts,
                             'recorded_ticket', v_credit.mt5_deal_ticket,
                             'seen_at', clock_timestamp()),
                      p_id, v_credit.deposit_id, NULL,
                      v_credit.amount_minor, v_credit.currency);
    RETURN true;
END
$$;

GRANT EXECUTE ON FUNCTION
    mt5credit.credit_orphan_deal(bigint, integer, bigint, text, jsonb)
    TO mt5credit_worker;
