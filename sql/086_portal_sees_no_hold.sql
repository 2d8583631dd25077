--
-- 086: the portal is not told that a withdrawal is held (tipping off).
--
-- A hold (080) is not disclosed to the client: withdrawal_progress() says
-- in_review for it, as for any request a person has yet to look at.  But
-- withdrawal_request() and withdrawal_amend(), the portal's other two
-- calls, returned the whole row: status held, the rules that tripped
-- with their figures (held_for) and the trading read from MT5.  They now
-- return the row as the client may see it (withdrawal_client_view()):
-- held reads requested, and held_for, trading_after and trading are
-- empty.  The row itself is unchanged.
--
-- Re-declared, this file holds their current definitions:
--   withdrawal_request()   (016's)
--   withdrawal_amend()     (016's)
--

CREATE FUNCTION mt5credit.withdrawal_client_view(w mt5credit.withdrawal)
RETURNS mt5credit.withdrawal
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF w.status = 'held' THEN
        w.status := 'requested';
    END IF;
    w.held_for := NULL;
    w.trading_after := NULL;
    w.trading := NULL;
    RETURN w;
END
$$;

--
-- The portal: a client's request.  The same key again is the same
-- request (returned as it is, as the client may see it: 086); the same
-- key with anything else asked is an error, never a second request.
--
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_request(p_client_id text,
    p_idempotency_key text, p_provider text, p_mt5_server text,
    p_mt5_login bigint, p_amount_minor bigint, p_currency text,
    p_destination text)
RETURNS mt5credit.withdrawal
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w  withdrawal;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM client_account
                   WHERE mt5_server = p_mt5_server
                     AND mt5_login = p_mt5_login
                     AND client_id = p_client_id AND status = 'active')
    THEN
        RAISE EXCEPTION 'client % does not own an active MT5 account %/%',
                        p_client_id, p_mt5_server, p_mt5_login
            USING ERRCODE = 'MC001';
    END IF;

    INSERT INTO withdrawal (client_id, idempotency_key, provider,
                            mt5_server, mt5_login, amount_minor, currency,
                            destination)
    VALUES (p_client_id, p_idempotency_key, p_provider, p_mt5_server,
            p_mt5_login, p_amount_minor, p_currency, p_destination)
    ON CONFLICT (client_id, idempotency_key) DO NOTHING
    RETURNING * INTO w;

    IF w.id IS NOT NULL THEN
        RETURN withdrawal_client_view(w);
    END IF;

    SELECT * INTO STRICT w FROM withdrawal
    WHERE client_id = p_client_id AND idempotency_key = p_idempotency_key;

    IF (w.provider, w.mt5_server, w.mt5_login, w.amount_minor, w.currency,
        w.destination)
       IS DISTINCT FROM
       (p_provider, p_mt5_server, p_mt5_login, p_amount_minor, p_currency,
        p_destination)
    THEN
        RAISE EXCEPTION 'idempotency key % already used for withdrawal % '
                        'with different parameters', p_idempotency_key,
                        w.reference USING ERRCODE = 'MC002';
    END IF;

    RETURN withdrawal_client_view(w);
END
$$;


-- the client changes the amount or destination of an open request
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_amend(p_client_id text,
    p_reference text, p_amount_minor bigint, p_destination text)
RETURNS mt5credit.withdrawal
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w  withdrawal;
BEGIN
    UPDATE withdrawal
    SET amount_minor = p_amount_minor, destination = p_destination
    WHERE client_id = p_client_id AND reference = p_reference
      AND status IN ('requested', 'prepared')
    RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no open withdrawal % of client %', p_reference,
                        p_client_id USING ERRCODE = 'MC072';
    END IF;
    RETURN withdrawal_client_view(w);
END
$$;


REVOKE ALL ON FUNCTION mt5credit.withdrawal_client_view(mt5credit.withdrawal)
    FROM PUBLIC;
