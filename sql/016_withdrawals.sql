--
-- 016: withdrawal requests and their maker-checker approval.
--
-- Money leaving the company: a client asks to withdraw from an MT5
-- account they own; one person (or the automated rules, as maker)
-- prepares the request, a different person approves it.  The database
-- refuses an approval by the maker, and an approval of anything but the
-- request as it was prepared and as the approver saw it: what was asked
-- is one digest, and approval names the digest it approves.
--
--   requested --prepare (maker)--> prepared --approve (checker)--> approved
--   requested|prepared --reject--> rejected
--   requested|prepared --client amends--> requested  (preparation void)
--   requested|prepared --client cancels--> cancelled
--
-- What happens after approval (the MT5 debit `wd:<id>` through the claim
-- path, then the payout) comes in a later migration; nothing here moves
-- money.
--

CREATE TABLE mt5credit.withdrawal (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reference        text        NOT NULL UNIQUE
                     GENERATED ALWAYS AS
                         ('wd_' || CASE WHEN id < 1000000
                                        THEN lpad(id::text, 6, '0')
                                        ELSE id::text END) STORED,
    client_id        text        NOT NULL,
    idempotency_key  text        NOT NULL
                     CHECK (idempotency_key ~ '^[A-Za-z0-9_.:-]{8,128}$'),
    provider         text        NOT NULL
                     CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    mt5_server       text        NOT NULL,
    mt5_login        bigint      NOT NULL,
    amount_minor     bigint      NOT NULL CHECK (amount_minor > 0),
    currency         text        NOT NULL
                     REFERENCES mt5credit.currency (code),
    -- where the money goes: the provider's token for the client's bank
    -- account or card, never raw account numbers
    destination      text        NOT NULL
                     CHECK (destination ~ '^[A-Za-z0-9_.:-]{1,255}$'),
    status           text        NOT NULL DEFAULT 'requested'
                     CHECK (status IN ('requested', 'prepared', 'approved',
                                       'rejected', 'cancelled')),
    -- what is asked, as one value: an approval is of exactly this
    request_digest   text        NOT NULL
                     GENERATED ALWAYS AS (md5(
                         client_id || '|' || provider || '|' || mt5_server
                         || '|' || mt5_login::text || '|'
                         || amount_minor::text || '|' || currency || '|'
                         || destination)) STORED,
    prepared_by      text,
    prepared_at      timestamptz,
    prepared_digest  text,
    approved_by      text,
    approved_at      timestamptz,
    approved_digest  text,
    decided_by       text,        -- rejected or cancelled by
    note             text        CHECK (length(note) <= 4000),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- a double click is one request
    UNIQUE (client_id, idempotency_key),
    -- from a login this client owns, in its currency
    FOREIGN KEY (mt5_server, mt5_login, client_id, currency)
        REFERENCES mt5credit.client_account
            (mt5_server, mt5_login, client_id, currency),
    -- prepared exactly when a maker and the digest they prepared are named
    CHECK ((prepared_by IS NOT NULL)
           = (prepared_at IS NOT NULL AND prepared_digest IS NOT NULL)),
    CHECK (status NOT IN ('prepared', 'approved') OR prepared_by IS NOT NULL),
    CHECK ((status = 'approved')
           = (approved_by IS NOT NULL AND approved_at IS NOT NULL
              AND approved_digest IS NOT NULL)),
    -- the two rules, for every writer, the owner included
    CONSTRAINT withdrawal_four_eyes
        CHECK (approved_by IS NULL OR approved_by <> prepared_by),
    CONSTRAINT withdrawal_approved_as_asked
        CHECK (approved_digest IS NULL
               OR (approved_digest = prepared_digest
                   AND approved_digest = request_digest))
);

COMMENT ON TABLE mt5credit.withdrawal IS
    'A client''s request to take money out of an MT5 account, and its '
    'maker-checker approval; the approved digest is what may be paid.';

CREATE INDEX withdrawal_open_idx ON mt5credit.withdrawal (status, id)
    WHERE status IN ('requested', 'prepared', 'approved');

CREATE TABLE mt5credit.withdrawal_transition (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO mt5credit.withdrawal_transition VALUES
    ('requested', 'prepared'),
    ('prepared', 'approved'),
    ('requested', 'rejected'),
    ('prepared', 'rejected'),
    ('prepared', 'requested'),
    ('requested', 'cancelled'),
    ('prepared', 'cancelled');


--
-- The last line: legal transitions only; a change of what is asked (the
-- client amending an open request) voids its preparation; a decided
-- request is final.
--
CREATE FUNCTION mt5credit.withdrawal_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    -- (a generated column is not computed yet in a BEFORE trigger: the
    -- fields it is made of are compared)
    IF (NEW.provider, NEW.mt5_server, NEW.mt5_login, NEW.amount_minor,
        NEW.currency, NEW.destination)
       IS DISTINCT FROM
       (OLD.provider, OLD.mt5_server, OLD.mt5_login, OLD.amount_minor,
        OLD.currency, OLD.destination)
       OR (NEW.client_id, NEW.idempotency_key, NEW.created_at)
          IS DISTINCT FROM (OLD.client_id, OLD.idempotency_key, OLD.created_at)
    THEN
        IF OLD.status NOT IN ('requested', 'prepared')
           OR (NEW.client_id, NEW.idempotency_key, NEW.created_at)
              IS DISTINCT FROM (OLD.client_id, OLD.idempotency_key,
                                OLD.created_at)
        THEN
            RAISE EXCEPTION 'withdrawal % is %: what it asks cannot change',
                            OLD.reference, OLD.status
                USING ERRCODE = 'MC070';
        END IF;
        NEW.status := 'requested';
        NEW.prepared_by := NULL;
        NEW.prepared_at := NULL;
        NEW.prepared_digest := NULL;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT EXISTS (SELECT 1 FROM withdrawal_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
    THEN
        RAISE EXCEPTION 'withdrawal %: % -> % is not a legal change',
                        OLD.reference, OLD.status, NEW.status
            USING ERRCODE = 'MC071';
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE TRIGGER withdrawal_guard
    BEFORE UPDATE ON mt5credit.withdrawal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_guard();

CREATE TRIGGER withdrawal_no_delete
    BEFORE DELETE ON mt5credit.withdrawal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- The portal: a client's request.  The same key again is the same
-- request (returned as it is); the same key with anything else asked is
-- an error, never a second request.
--
CREATE FUNCTION mt5credit.withdrawal_request(p_client_id text,
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
        RETURN w;
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

    RETURN w;
END
$$;


-- the client changes the amount or destination of an open request
CREATE FUNCTION mt5credit.withdrawal_amend(p_client_id text,
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
    RETURN w;
END
$$;


--
-- The maker: a person at the desk, or the automated rules logged in as
-- their own role.  Prepares the request as it is now; returns the digest
-- the checker must approve.
--
CREATE FUNCTION mt5credit.withdrawal_prepare(p_reference text, p_note text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w  withdrawal;
BEGIN
    UPDATE withdrawal
    SET status = 'prepared', prepared_by = session_user,
        prepared_at = clock_timestamp(), prepared_digest = request_digest,
        note = coalesce(p_note, note)
    WHERE reference = p_reference AND status = 'requested'
    RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % is not waiting to be prepared',
                        p_reference USING ERRCODE = 'MC073';
    END IF;
    RETURN w.prepared_digest;
END
$$;


--
-- The checker: approves the request whose digest they saw.  Refused to
-- the maker, and refused when the request is not, or no longer, what was
-- prepared and shown.
--
CREATE FUNCTION mt5credit.withdrawal_approve(p_reference text,
    p_digest text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w       withdrawal;
    v_rows  integer;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    IF NOT FOUND OR w.status <> 'prepared' THEN
        RAISE EXCEPTION 'withdrawal % is not prepared for approval',
                        p_reference USING ERRCODE = 'MC073';
    END IF;
    IF w.prepared_by = session_user THEN
        RAISE EXCEPTION 'maker-checker: % prepared withdrawal % and cannot '
                        'approve it; another person must', session_user,
                        p_reference USING ERRCODE = 'MC074';
    END IF;
    IF p_digest IS DISTINCT FROM w.prepared_digest
       OR w.prepared_digest IS DISTINCT FROM w.request_digest
    THEN
        RAISE EXCEPTION 'withdrawal % is not the request that was '
                        'prepared and shown: nothing approved', p_reference
            USING ERRCODE = 'MC075';
    END IF;

    UPDATE withdrawal
    SET status = 'approved', approved_by = session_user,
        approved_at = clock_timestamp(), approved_digest = p_digest,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = 'prepared'
      AND request_digest = p_digest;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'withdrawal % changed under the approval',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
END
$$;


CREATE FUNCTION mt5credit.withdrawal_reject(p_reference text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    UPDATE withdrawal
    SET status = 'rejected', decided_by = session_user, note = p_note
    WHERE reference = p_reference AND status IN ('requested', 'prepared');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % is not open', p_reference
            USING ERRCODE = 'MC073';
    END IF;
END
$$;


GRANT EXECUTE ON FUNCTION
    mt5credit.withdrawal_request(text, text, text, text, bigint, bigint,
                                 text, text),
    mt5credit.withdrawal_amend(text, text, bigint, text)
    TO mt5credit_portal;

GRANT EXECUTE ON FUNCTION
    mt5credit.withdrawal_prepare(text, text)
    TO mt5credit_operator, mt5credit_worker;

GRANT EXECUTE ON FUNCTION
    mt5credit.withdrawal_approve(text, text, text),
    mt5credit.withdrawal_reject(text, text)
    TO mt5credit_operator;
