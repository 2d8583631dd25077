--
-- 018: the payout of a withdrawal, after its MT5 debit.
--
-- The money leaves the company last: a payout row exists only for a
-- withdrawal whose MT5 debit is done (017), and is created by the same
-- transaction that records the debit's deal.  `mt5credit payout` sends it
-- to the provider with an idempotency key that is the same on every
-- attempt, so a repeat is the same payout; but, as with balance deals, a
-- send whose outcome is not known is never simply repeated:
--
--   pending --claim--> sending --payout object--> accepted | paid
--                         |   \--explicit decline--> rejected   (a person)
--                         \--timeout, 5xx, garbled, expired lease--> unknown
--   unknown --found at the provider--> accepted | paid | rejected
--   unknown --complete listing, not there--> pending   (send again, same key)
--   unknown --no complete answer--> unknown, backoff; a case after N
--   accepted --status query--> paid | rejected
--
-- A rejection after the debit leaves the money taken from MT5 and not paid
-- out: a critical case on the debit credit.  Giving it back to MT5 is a
-- correcting credit proposed by one person and approved by another (010).
--

-- targets of the payout's composite foreign keys
ALTER TABLE mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_payout_terms
        UNIQUE (id, provider, amount_minor, currency, destination);

ALTER TABLE mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_settled_debit
        UNIQUE (id, withdrawal_id, kind, status);


CREATE TABLE mt5credit.payout (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    withdrawal_id       bigint      NOT NULL UNIQUE,
    debit_credit_id     bigint      NOT NULL UNIQUE,
    -- what is paid, from the approved request (the foreign key below)
    provider            text        NOT NULL,
    amount_minor        bigint      NOT NULL CHECK (amount_minor > 0),
    currency            text        NOT NULL,
    destination         text        NOT NULL,
    -- our reference at the provider, and the provider's idempotency key:
    -- derived, so every attempt sends the same ones
    reference           text        NOT NULL UNIQUE
                        GENERATED ALWAYS AS
                            ('wd_' || CASE WHEN withdrawal_id < 1000000
                                          THEN lpad(withdrawal_id::text, 6,
                                                    '0')
                                          ELSE withdrawal_id::text END)
                            STORED,
    idempotency_key     text        NOT NULL UNIQUE
                        GENERATED ALWAYS AS
                            ('mt5credit-payout-' || withdrawal_id) STORED,
    -- only a done withdrawal debit can be paid out (done is final)
    debit_kind          text        NOT NULL
                        GENERATED ALWAYS AS ('withdrawal') STORED,
    debit_status        text        NOT NULL
                        GENERATED ALWAYS AS ('done') STORED,

    status              text        NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'sending', 'unknown',
                                          'accepted', 'paid', 'rejected')),
    attempts            integer     NOT NULL DEFAULT 0
                        CHECK (attempts >= 0),
    claimed_by          text,
    claimed_at          timestamptz,
    lease_expires_at    timestamptz,
    first_sent_at       timestamptz,
    next_check_at       timestamptz,
    lookups             integer     NOT NULL DEFAULT 0
                        CHECK (lookups >= 0),
    provider_payout_id  text
                        CHECK (provider_payout_id ~ '^[A-Za-z0-9_-]{1,255}$'),
    provider_status     text        CHECK (length(provider_status) <= 64),
    failure_code        text        CHECK (length(failure_code) <= 128),
    failure_message     text        CHECK (length(failure_message) <= 1000),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),

    FOREIGN KEY (withdrawal_id, provider, amount_minor, currency,
                 destination)
        REFERENCES mt5credit.withdrawal
            (id, provider, amount_minor, currency, destination),
    FOREIGN KEY (debit_credit_id, withdrawal_id, debit_kind, debit_status)
        REFERENCES mt5credit.mt5_credit (id, withdrawal_id, kind, status),

    -- the provider's id exactly once it has vouched for the payout
    CHECK (status NOT IN ('accepted', 'paid')
           OR provider_payout_id IS NOT NULL),
    CHECK (status <> 'rejected' OR failure_code IS NOT NULL),
    CHECK (status <> 'sending'
           OR (claimed_by IS NOT NULL AND claimed_at IS NOT NULL
               AND lease_expires_at IS NOT NULL)),
    CHECK (status = 'pending' OR attempts > 0),
    CHECK ((attempts > 0) = (first_sent_at IS NOT NULL))
);

COMMENT ON TABLE mt5credit.payout IS
    'The payout of a withdrawal whose MT5 debit is done, and the state of '
    'sending it to the provider under one idempotency key.';

CREATE INDEX payout_open_idx ON mt5credit.payout (status, id)
    WHERE status IN ('pending', 'sending', 'unknown', 'accepted');


CREATE TABLE mt5credit.payout_history (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payout_id    bigint      NOT NULL REFERENCES mt5credit.payout (id),
    from_status  text,
    to_status    text        NOT NULL,
    attempts     integer     NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text        NOT NULL,
    detail       jsonb       NOT NULL DEFAULT '{}',
    CHECK (from_status IS DISTINCT FROM to_status)
);

CREATE INDEX payout_history_payout_idx
    ON mt5credit.payout_history (payout_id, id);

CREATE TRIGGER payout_history_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.payout_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER payout_no_delete
    BEFORE DELETE ON mt5credit.payout
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


CREATE TABLE mt5credit.payout_transition (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    why          text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO mt5credit.payout_transition VALUES
    ('pending',  'sending',  'a sender claimed it'),
    ('sending',  'pending',  'its sender released it before sending'),
    ('sending',  'accepted', 'the provider answered with the payout'),
    ('sending',  'paid',     'the provider answered with the payout, paid'),
    ('sending',  'rejected', 'the provider declined it explicitly'),
    ('sending',  'unknown',  'timeout, error or expired lease'),
    ('unknown',  'accepted', 'found at the provider'),
    ('unknown',  'paid',     'found at the provider, paid'),
    ('unknown',  'rejected', 'found at the provider, failed'),
    ('unknown',  'pending',  'the provider''s complete listing lacks it'),
    ('accepted', 'paid',     'the provider paid it'),
    ('accepted', 'rejected', 'the provider failed it after accepting');


--
-- The last line: legal transitions only, what is paid never changes, the
-- provider's id once known never changes; every change is history.
--
CREATE FUNCTION mt5credit.payout_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO payout_history (payout_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
        RETURN NEW;
    END IF;

    IF (NEW.withdrawal_id, NEW.debit_credit_id, NEW.provider,
        NEW.amount_minor, NEW.currency, NEW.destination, NEW.created_at)
       IS DISTINCT FROM
       (OLD.withdrawal_id, OLD.debit_credit_id, OLD.provider,
        OLD.amount_minor, OLD.currency, OLD.destination, OLD.created_at)
       OR (OLD.provider_payout_id IS NOT NULL
           AND NEW.provider_payout_id IS DISTINCT FROM OLD.provider_payout_id)
       OR NEW.attempts < OLD.attempts
    THEN
        RAISE EXCEPTION 'payout %: what it pays and whom the provider says '
                        'it is never change', OLD.reference
            USING ERRCODE = 'MC080';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM payout_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'payout %: % -> % is not a legal transition',
                            OLD.reference, OLD.status, NEW.status
                USING ERRCODE = 'MC081';
        END IF;

        INSERT INTO payout_history (payout_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts,
                credit_actor(), credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE TRIGGER payout_guard_and_log
    BEFORE UPDATE ON mt5credit.payout
    FOR EACH ROW EXECUTE FUNCTION mt5credit.payout_guard_and_log();

CREATE TRIGGER payout_log_insert
    AFTER INSERT ON mt5credit.payout
    FOR EACH ROW EXECUTE FUNCTION mt5credit.payout_guard_and_log();


--
-- The debit's deal recorded (by the worker or the resolver) is what makes
-- the payout: in that same transaction, so a done debit never lacks one.
--
CREATE FUNCTION mt5credit.payout_after_debit()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    INSERT INTO payout (withdrawal_id, debit_credit_id, provider,
                        amount_minor, currency, destination)
    SELECT w.id, NEW.id, w.provider, w.amount_minor, w.currency,
           w.destination
    FROM withdrawal w
    WHERE w.id = NEW.withdrawal_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_payout_after_debit
    AFTER UPDATE OF status ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.kind = 'withdrawal' AND NEW.status = 'done'
          AND OLD.status <> 'done')
    EXECUTE FUNCTION mt5credit.payout_after_debit();


-- what a sender needs to send (or look up) a payout
CREATE TYPE mt5credit.payout_item AS (
    id                  bigint,
    attempts            integer,
    status              text,
    reference           text,
    idempotency_key     text,
    provider            text,
    amount_minor        bigint,
    currency            text,
    destination         text,
    provider_payout_id  text,
    debit_reference     text,
    first_sent_epoch    bigint
);

CREATE FUNCTION mt5credit.payout_item_of(p_id bigint)
RETURNS mt5credit.payout_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT p.id, p.attempts, p.status, p.reference, p.idempotency_key,
           p.provider, p.amount_minor, p.currency, p.destination,
           p.provider_payout_id, c.reference,
           extract(epoch FROM p.first_sent_at)::bigint
    FROM payout p
    JOIN mt5_credit c ON c.id = p.debit_credit_id
    WHERE p.id = p_id
$$;


--
-- pending -> sending: the oldest pending payout of this provider, one
-- atomic statement (SKIP LOCKED: concurrent senders never share a row).
-- The attempt number is the lease token for the calls below.
--
CREATE FUNCTION mt5credit.payout_claim(p_provider text, p_sender text,
    p_lease_seconds integer)
RETURNS SETOF mt5credit.payout_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second' USING ERRCODE = 'MC020';
    END IF;
    PERFORM set_actor(p_sender, '{"step": "claim"}');

    WITH next AS (
        SELECT id FROM payout
        WHERE status = 'pending' AND provider = p_provider
        ORDER BY id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE payout p
    SET status = 'sending', attempts = p.attempts + 1,
        claimed_by = left(p_sender, 200), claimed_at = clock_timestamp(),
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        first_sent_at = coalesce(p.first_sent_at, clock_timestamp()),
        next_check_at = NULL
    FROM next
    WHERE p.id = next.id AND p.status = 'pending'
    RETURNING p.id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN NEXT payout_item_of(v_id);
    END IF;
END
$$;


-- sending -> pending: nothing was sent
CREATE FUNCTION mt5credit.payout_release(p_id bigint, p_attempt integer,
    p_sender text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout SET status = 'pending', lease_expires_at = NULL
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


-- sending -> unknown: the send may or may not have reached the provider
CREATE FUNCTION mt5credit.payout_unknown(p_id bigint, p_attempt integer,
    p_sender text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout SET status = 'unknown'
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


-- a sender that died mid-send: its payout may have reached the provider
CREATE FUNCTION mt5credit.payout_sweep(p_sender text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
BEGIN
    PERFORM set_actor(p_sender, '{"step": "sweep", "reason": "lease expired"}');
    UPDATE payout SET status = 'unknown'
    WHERE status = 'sending' AND lease_expires_at < clock_timestamp();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


--
-- What the provider said about the payout (its own object, checked by the
-- caller: our reference, amount, currency and destination), from the
-- status the caller saw the payout in.  The provider's status decides:
-- pending and in_transit are accepted, paid is paid, failed and canceled
-- are a rejection: a critical case, since the MT5 debit stands.
--
CREATE FUNCTION mt5credit.payout_answered(p_id bigint, p_attempt integer,
    p_from text, p_payout_id text, p_status text, p_failure_code text,
    p_failure_message text, p_sender text, p_detail jsonb,
    p_recheck_seconds integer)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p      payout;
    v_to   text;
BEGIN
    IF p_from NOT IN ('sending', 'unknown', 'accepted') THEN
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

    PERFORM set_actor(p_sender, coalesce(p_detail, '{}')
                                || jsonb_build_object('provider_status',
                                                      p_status));

    UPDATE payout
    SET status = v_to, provider_payout_id = p_payout_id,
        provider_status = p_status,
        failure_code = CASE WHEN v_to = 'rejected'
                            THEN coalesce(p_failure_code, p_status) END,
        failure_message = CASE WHEN v_to = 'rejected'
                               THEN left(p_failure_message, 1000) END,
        lease_expires_at = NULL,
        next_check_at = CASE WHEN v_to = 'accepted'
                             THEN clock_timestamp()
                                  + make_interval(secs => p_recheck_seconds)
                             END
    WHERE id = p_id AND status = p_from AND attempts = p_attempt
      AND (provider_payout_id IS NULL OR provider_payout_id = p_payout_id)
    RETURNING * INTO p;

    IF NOT FOUND THEN
        RETURN 'stale';
    END IF;

    IF v_to = 'rejected' THEN
        PERFORM payout_rejected_case(p);
    END IF;
    RETURN v_to;
END
$$;


-- sending -> rejected: the provider refused the request outright
CREATE FUNCTION mt5credit.payout_declined(p_id bigint, p_attempt integer,
    p_failure_code text, p_failure_message text, p_sender text,
    p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p  payout;
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout
    SET status = 'rejected', failure_code = p_failure_code,
        failure_message = left(p_failure_message, 1000),
        lease_expires_at = NULL
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt
    RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM payout_rejected_case(p);
    RETURN true;
END
$$;


CREATE FUNCTION mt5credit.payout_rejected_case(p mt5credit.payout)
RETURNS void
LANGUAGE sql
SET search_path = mt5credit, pg_temp
AS $$
    SELECT open_case('payout_rejected', 'critical',
        'payout_rejected:' || p.reference,
        jsonb_build_object('payout', p.reference,
                           'provider_payout_id', p.provider_payout_id,
                           'failure_code', p.failure_code,
                           'failure_message', p.failure_message,
                           'note', 'the MT5 debit stands and nothing was '
                                   'paid out: return the money with a '
                                   'correcting credit (two people)'),
        p.debit_credit_id, NULL, NULL, p.amount_minor, p.currency);
$$;


--
-- Payouts to look at: unknown ones past their lease and a margin (any
-- send under it has finished), and accepted ones due for a status check.
-- Unknown ones first, then whichever has waited longest: a crowd of
-- accepted payouts rechecked every few seconds must not starve a lookup.
-- Picking sets next_check_at as a short lease of its own.
--
CREATE FUNCTION mt5credit.payout_check_due(p_provider text,
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
                   OR status = 'accepted')
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


-- unknown -> pending: the provider's complete listing has no such payout
CREATE FUNCTION mt5credit.payout_absent(p_id bigint, p_attempt integer,
    p_sender text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout
    SET status = 'pending', next_check_at = NULL, lease_expires_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


--
-- A look that settled nothing (no complete answer, an answer that does
-- not match, two payouts with our reference): the state stays, the next
-- look backs off, and a person is told after p_max_lookups, or at once
-- for a conflict.  Returns whether a case was opened.
--
CREATE FUNCTION mt5credit.payout_check_failed(p_id bigint, p_attempt integer,
    p_case_kind text, p_why text, p_backoff_seconds integer,
    p_max_lookups integer, p_sender text)
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
      AND status IN ('unknown', 'accepted')
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


--
-- The client's view of a withdrawal, one word: what they may be told.
--
CREATE FUNCTION mt5credit.withdrawal_progress(p_client_id text,
    p_reference text)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT CASE
           WHEN w.status IN ('requested', 'prepared') THEN 'in_review'
           WHEN w.status IN ('rejected', 'cancelled') THEN w.status
           WHEN c.status = 'failed' THEN 'declined'
           WHEN p.status = 'paid' THEN 'paid'
           WHEN p.status = 'accepted' THEN 'sent'
           WHEN p.status = 'rejected' THEN 'under_review'
           ELSE 'processing'
           END
    FROM withdrawal w
    LEFT JOIN mt5_credit c ON c.withdrawal_id = w.id AND c.kind = 'withdrawal'
    LEFT JOIN payout p ON p.withdrawal_id = w.id
    WHERE w.client_id = p_client_id AND w.reference = p_reference
$$;


GRANT EXECUTE ON FUNCTION
    mt5credit.payout_claim(text, text, integer),
    mt5credit.payout_release(bigint, integer, text, jsonb),
    mt5credit.payout_unknown(bigint, integer, text, jsonb),
    mt5credit.payout_sweep(text),
    mt5credit.payout_answered(bigint, integer, text, text, text, text, text,
                              text, jsonb, integer),
    mt5credit.payout_declined(bigint, integer, text, text, text, jsonb),
    mt5credit.payout_check_due(text, integer, integer, integer),
    mt5credit.payout_absent(bigint, integer, text, jsonb),
    mt5credit.payout_check_failed(bigint, integer, text, text, integer,
                                  integer, text)
    TO mt5credit_worker;

GRANT EXECUTE ON FUNCTION
    mt5credit.withdrawal_progress(text, text)
    TO mt5credit_portal;
