--
-- 023: corrections a person proposes: exact, and only where they can be
-- made.
--
-- 010's case_propose() computed `amount * 10 ^ digits`, and `10 ^ smallint`
-- resolves to double precision: 12345678.12345678 BTC became
-- 1234567812345680 satoshi, 2 off.  major_to_minor() multiplies by a
-- numeric power of ten, which is exact, and case_propose() uses it.
--
-- And a correction (a credit or debit adjusting a credit) is claimed by
-- the worker only once the credit it adjusts is done; one approved for a
-- failed or unknown credit waited for ever, with no case.  case_propose()
-- now refuses it: the credit is settled first.
--
-- Re-declared (CREATE OR REPLACE: migrations are immutable once applied);
-- this file holds the current definition of case_propose().  What is new
-- in it: the call of major_to_minor(), the refusal marked 023, and the
-- settle_failed action of 032 (an unknown credit, on evidence).
--

-- p_amount (major units) in minor units of p_currency, exactly; NULL for
-- a currency we do not know
CREATE FUNCTION mt5credit.major_to_minor(p_amount numeric, p_currency text)
RETURNS numeric
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT trim_scale(p_amount * (10::numeric ^ c.minor_digits))
    FROM currency c WHERE c.code = p_currency
$$;


--
-- case_propose(): one person proposes moving money.  Nothing moves yet.
--   requeue_credit     a failed credit back to pending (the worker makes
--                      it), for when the cause of the failure is fixed;
--   correcting_credit  a new credit of amount to the credit's login;
--   correcting_debit   a new debit of amount from it.
--
CREATE OR REPLACE FUNCTION mt5credit.case_propose(p_case bigint, p_action text,
    p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_id    bigint;
    v_num   numeric;
    v_amount_minor  bigint;
BEGIN
    PERFORM desk_require_open(c);
    SELECT * INTO v_cr FROM mt5_credit
    WHERE id = coalesce(p_credit_id, c.credit_id);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'case %: which credit? none given and none on the '
                        'case', p_case USING ERRCODE = 'MC048';
    END IF;
    IF p_action = 'settle_failed' THEN
        -- 032: an unknown credit settled as failed, on evidence
        IF v_cr.status <> 'unknown' THEN
            RAISE EXCEPTION 'credit % is %: only an unknown credit is '
                            'settled', v_cr.id, v_cr.status
                USING ERRCODE = 'MC048';
        END IF;
        IF jsonb_array_length(coalesce(p_evidence, '[]')) = 0 THEN
            RAISE EXCEPTION 'settling credit % as failed needs evidence that '
                            'it has no deal (--evidence)', v_cr.id
                USING ERRCODE = 'MC048';
        END IF;
    END IF;
    IF p_action = 'requeue_credit' AND v_cr.status <> 'failed' THEN
        RAISE EXCEPTION 'credit % is %: only a failed credit can be '
                        're-queued', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    -- a correction is claimed only once the credit it adjusts is done:
    -- proposed for one that is not, it would wait for ever (023)
    IF p_action IN ('correcting_credit', 'correcting_debit')
       AND v_cr.status <> 'done'
    THEN
        RAISE EXCEPTION 'credit % is %: a correction adjusts a done credit; '
                        'settle this one first', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action IN ('correcting_credit', 'correcting_debit') THEN
        -- major units, exactly: 12.345 USD is refused, not rounded
        IF p_amount IS NULL OR p_amount !~ '^[0-9]{1,15}(\.[0-9]{1,8})?$'
        THEN
            RAISE EXCEPTION 'a correction needs an amount like 12.50, '
                            'not "%"', coalesce(p_amount, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_num := major_to_minor(p_amount::numeric, v_cr.currency);
        IF v_num <> trunc(v_num) OR v_num <= 0 THEN
            RAISE EXCEPTION '% is not a positive amount in whole minor '
                            'units of %', p_amount, v_cr.currency
                USING ERRCODE = 'MC048';
        END IF;
        v_amount_minor := v_num::bigint;
    END IF;

    INSERT INTO money_proposal (case_id, action, credit_id, amount_minor,
                                currency, note, evidence, proposed_by)
    VALUES (p_case, p_action, v_cr.id,
            v_amount_minor,
            CASE WHEN p_action IN ('correcting_credit', 'correcting_debit')
                 THEN v_cr.currency END,
            p_note, coalesce(p_evidence, '[]'), session_user)
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = p_case;
    PERFORM desk_record(p_case, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', p_action, 'credit', v_cr.id,
                           'amount_minor', v_amount_minor,
                           'currency', v_cr.currency),
        p_note, p_evidence);
    RETURN v_id;
END
$$;
