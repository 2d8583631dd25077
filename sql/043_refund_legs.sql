--
-- 043: the refund legs of a withdrawal, sent; the payout pays the rest.
--
-- 042 made the plan: refunds to the deposits the money came from, newest
-- first, and a payout for the rest.  Here the plan is carried out.  The
-- debit's deal recorded (017) makes, in that same transaction, one refund
-- row per refund leg of the approved plan and a payout (018) for the
-- payout leg alone, if there is one; a withdrawal approved before plans
-- existed still pays its whole amount out.
--
-- A refund leg is sent as the payout is (018), under one idempotency key
-- per leg, and never simply repeated when its outcome is not known:
--
--   pending --claim--> sending --refund object--> accepted | succeeded
--                         |   \--explicit decline--> failed      (a person)
--                         \--timeout, 5xx, garbled, expired lease--> unknown
--   unknown --found at the provider--> accepted | succeeded | failed
--   unknown --complete listing, not there--> pending  (send again, same key)
--   unknown --no complete answer--> unknown, backoff; a case after N
--   accepted --status query--> succeeded | failed
--   succeeded --watched a while; the provider failed it--> failed
--
-- A failed leg leaves its share of the MT5 debit taken and not given
-- back: a critical case on the debit, and two people return it with a
-- correcting credit (010).
--
-- The trap: Stripe tells us about our own refunds too (charge.refunded,
-- refund.created/updated/failed).  Those must never become a refund debit
-- (`rfd:`) of the deposit: the money already left MT5 in the withdrawal's
-- debit.  A refund carrying our metadata, or whose id is a leg's, is
-- recognised as the leg and only makes the sender look at it; a charge's
-- cumulative amount_refunded has every leg that may be at the provider
-- (sent, whatever its answer, and not failed) taken off before the rest
-- is debited; and no refund debit may take a deposit below what its legs
-- have refunded.  When the two cannot be told apart (a leg found absent
-- after a client's own refund), the doubt falls on the side of no debit,
-- and reconciliation shows the refund without one.
--
-- The payout leg's own provider reports on it too: a bank-transfer PSP's
-- signed status webhooks (the generic rail, docs/providers.md), payout.*
-- through the edge.  They change nothing by themselves either: the
-- payout is made due for the sender's own status query at once.
--
-- payout_after_debit() (018), stripe_facts() (006), standard_facts()
-- (006), ingest_reversal() (006), withdrawal_progress() (018),
-- work_status() (021), deposit_refund_state() (027) and withdrawal_show()
-- (042) are re-declared here: this file holds their current definitions.
--

-- targets of the executions' composite foreign keys: the leg of the plan
-- that was approved, exactly as planned
ALTER TABLE mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_refund_terms
        UNIQUE (withdrawal_id, plan_no, leg, kind, provider, credit_id,
                payment_key, amount_minor, currency, account_amount_minor),
    ADD CONSTRAINT withdrawal_leg_payout_terms
        UNIQUE (withdrawal_id, plan_no, leg, kind, provider, amount_minor,
                currency);

ALTER TABLE mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_approved_plan UNIQUE (id, plan_no),
    ADD CONSTRAINT withdrawal_payout_destination
        UNIQUE (id, provider, currency, destination);


CREATE TABLE mt5credit.withdrawal_refund (
    id                    bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    withdrawal_id         bigint  NOT NULL,
    plan_no               integer NOT NULL,
    leg                   integer NOT NULL,
    leg_kind              text    NOT NULL GENERATED ALWAYS AS ('refund')
                                  STORED,
    debit_credit_id       bigint  NOT NULL,
    debit_kind            text    NOT NULL GENERATED ALWAYS AS ('withdrawal')
                                  STORED,
    debit_status          text    NOT NULL GENERATED ALWAYS AS ('done')
                                  STORED,
    -- what is refunded: the leg as planned (the foreign key below)
    provider              text    NOT NULL,
    credit_id             bigint  NOT NULL,    -- the deposit's credit
    payment_key           text    NOT NULL,    -- the provider's payment
    amount_minor          bigint  NOT NULL CHECK (amount_minor > 0),
    currency              text    NOT NULL,    -- the payment's
    account_amount_minor  bigint  NOT NULL CHECK (account_amount_minor > 0),
    -- our reference at the provider, and the idempotency key: derived, so
    -- every attempt sends the same ones
    reference             text    NOT NULL UNIQUE
                          GENERATED ALWAYS AS
                              ('wd_' || CASE WHEN withdrawal_id < 1000000
                                            THEN lpad(withdrawal_id::text, 6,
                                                      '0')
                                            ELSE withdrawal_id::text END
                               || '.' || leg) STORED,
    idempotency_key       text    NOT NULL UNIQUE
                          GENERATED ALWAYS AS
                              ('mt5credit-refund-' || withdrawal_id || '-'
                               || leg) STORED,
    deployment_tag        text,

    status                text    NOT NULL DEFAULT 'pending'
                          CHECK (status IN ('pending', 'sending', 'unknown',
                                            'accepted', 'succeeded',
                                            'failed')),
    attempts              integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    claimed_by            text,
    claimed_at            timestamptz,
    lease_expires_at      timestamptz,
    first_sent_at         timestamptz,
    next_check_at         timestamptz,
    watch_until           timestamptz,
    lookups               integer NOT NULL DEFAULT 0 CHECK (lookups >= 0),
    provider_refund_id    text
                          CHECK (provider_refund_id ~ '^[A-Za-z0-9_-]{1,255}$'),
    provider_status       text    CHECK (length(provider_status) <= 64),
    failure_code          text    CHECK (length(failure_code) <= 128),
    failure_message       text    CHECK (length(failure_message) <= 1000),
    -- what the client is shown: the card's brand and last four digits,
    -- as the provider names the refunded charge (never more of it)
    card_hint             text    CHECK (card_hint ~ '^[a-z_]{1,24} [0-9]{4}$'),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),

    UNIQUE (withdrawal_id, leg),
    UNIQUE (provider, provider_refund_id),
    FOREIGN KEY (withdrawal_id, plan_no)
        REFERENCES mt5credit.withdrawal (id, plan_no),
    FOREIGN KEY (withdrawal_id, plan_no, leg, leg_kind, provider, credit_id,
                 payment_key, amount_minor, currency, account_amount_minor)
        REFERENCES mt5credit.withdrawal_leg
            (withdrawal_id, plan_no, leg, kind, provider, credit_id,
             payment_key, amount_minor, currency, account_amount_minor),
    FOREIGN KEY (debit_credit_id, withdrawal_id, debit_kind, debit_status)
        REFERENCES mt5credit.mt5_credit (id, withdrawal_id, kind, status),

    -- the provider's id exactly once it has vouched for the refund
    CHECK (status NOT IN ('accepted', 'succeeded')
           OR provider_refund_id IS NOT NULL),
    CHECK (status <> 'failed' OR failure_code IS NOT NULL),
    CHECK (status <> 'sending'
           OR (claimed_by IS NOT NULL AND claimed_at IS NOT NULL
               AND lease_expires_at IS NOT NULL)),
    CHECK (status = 'pending' OR attempts > 0),
    CHECK ((attempts > 0) = (first_sent_at IS NOT NULL)),
    CHECK (watch_until IS NULL OR status IN ('succeeded', 'failed'))
);

COMMENT ON TABLE mt5credit.withdrawal_refund IS
    'A refund leg of a withdrawal whose MT5 debit is done, and the state of '
    'sending it to the provider under one idempotency key.';

CREATE INDEX withdrawal_refund_open_idx
    ON mt5credit.withdrawal_refund (status, id)
    WHERE status IN ('pending', 'sending', 'unknown', 'accepted');
CREATE INDEX withdrawal_refund_watched_idx
    ON mt5credit.withdrawal_refund (next_check_at)
    WHERE status = 'succeeded' AND next_check_at IS NOT NULL;
-- ingest's question: which legs are on this payment?
CREATE INDEX withdrawal_refund_credit_idx
    ON mt5credit.withdrawal_refund (credit_id);

CREATE TRIGGER withdrawal_refund_deployment
    BEFORE INSERT OR UPDATE OF deployment_tag ON mt5credit.withdrawal_refund
    FOR EACH ROW EXECUTE FUNCTION mt5credit.deployment_stamp();

CREATE TRIGGER withdrawal_refund_no_delete
    BEFORE DELETE ON mt5credit.withdrawal_refund
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


CREATE TABLE mt5credit.withdrawal_refund_history (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    refund_id    bigint      NOT NULL
                 REFERENCES mt5credit.withdrawal_refund (id),
    from_status  text,
    to_status    text        NOT NULL,
    attempts     integer     NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text        NOT NULL,
    detail       jsonb       NOT NULL DEFAULT '{}',
    CHECK (from_status IS DISTINCT FROM to_status)
);

CREATE INDEX withdrawal_refund_history_refund_idx
    ON mt5credit.withdrawal_refund_history (refund_id, id);

CREATE TRIGGER withdrawal_refund_history_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.withdrawal_refund_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


CREATE TABLE mt5credit.withdrawal_refund_transition (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    why          text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO mt5credit.withdrawal_refund_transition VALUES
    ('pending',   'sending',   'a sender claimed it'),
    ('sending',   'pending',   'its sender released it before sending'),
    ('sending',   'accepted',  'the provider answered with the refund'),
    ('sending',   'succeeded', 'the provider answered with it, succeeded'),
    ('sending',   'failed',    'the provider declined it, or it failed'),
    ('sending',   'unknown',   'timeout, error or expired lease'),
    ('unknown',   'accepted',  'found at the provider'),
    ('unknown',   'succeeded', 'found at the provider, succeeded'),
    ('unknown',   'failed',    'found at the provider, failed'),
    ('unknown',   'pending',   'the provider''s complete listing lacks it'),
    ('accepted',  'succeeded', 'the provider refunded it'),
    ('accepted',  'failed',    'the provider failed it after accepting'),
    ('succeeded', 'failed',    'the provider failed it after it succeeded');


--
-- The last line, as payout_guard_and_log() is for payouts: legal
-- transitions only, what is refunded never changes, the provider's id
-- once known never changes; every change is history.
--
CREATE FUNCTION mt5credit.withdrawal_refund_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO withdrawal_refund_history (refund_id, from_status,
                                               to_status, attempts, actor,
                                               detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
        RETURN NEW;
    END IF;

    IF (NEW.withdrawal_id, NEW.plan_no, NEW.leg, NEW.debit_credit_id,
        NEW.provider, NEW.credit_id, NEW.payment_key, NEW.amount_minor,
        NEW.currency, NEW.account_amount_minor, NEW.created_at)
       IS DISTINCT FROM
       (OLD.withdrawal_id, OLD.plan_no, OLD.leg, OLD.debit_credit_id,
        OLD.provider, OLD.credit_id, OLD.payment_key, OLD.amount_minor,
        OLD.currency, OLD.account_amount_minor, OLD.created_at)
       OR (OLD.provider_refund_id IS NOT NULL
           AND NEW.provider_refund_id IS DISTINCT FROM OLD.provider_refund_id)
       OR (OLD.card_hint IS NOT NULL
           AND NEW.card_hint IS DISTINCT FROM OLD.card_hint)
       OR NEW.attempts < OLD.attempts
    THEN
        RAISE EXCEPTION 'refund %: what it refunds and whom the provider '
                        'says it is never change', OLD.reference
            USING ERRCODE = 'MC090';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM withdrawal_refund_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'refund %: % -> % is not a legal transition',
                            OLD.reference, OLD.status, NEW.status
                USING ERRCODE = 'MC091';
        END IF;

        INSERT INTO withdrawal_refund_history (refund_id, from_status,
                                               to_status, attempts, actor,
                                               detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts,
                credit_actor(), credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE TRIGGER withdrawal_refund_guard_and_log
    BEFORE UPDATE ON mt5credit.withdrawal_refund
    FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_refund_guard_and_log();

CREATE TRIGGER withdrawal_refund_log_insert
    AFTER INSERT ON mt5credit.withdrawal_refund
    FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_refund_guard_and_log();


--
-- The payout is the payout leg now.  Its old foreign key held its amount
-- to the withdrawal's; the leg's key holds it to the plan, and a second
-- key holds the provider, currency and destination to the request.  A
-- payout without a leg (plan_no NULL) is one of a withdrawal approved
-- before plans existed, and pays the whole amount (the trigger below).
--
ALTER TABLE mt5credit.payout
    ADD COLUMN plan_no   integer,
    ADD COLUMN leg       integer,
    ADD COLUMN leg_kind  text NOT NULL GENERATED ALWAYS AS ('payout') STORED,
    ADD CONSTRAINT payout_leg_whole CHECK ((plan_no IS NULL) = (leg IS NULL)),
    ADD CONSTRAINT payout_is_its_leg
        FOREIGN KEY (withdrawal_id, plan_no, leg, leg_kind, provider,
                     amount_minor, currency)
        REFERENCES mt5credit.withdrawal_leg
            (withdrawal_id, plan_no, leg, kind, provider, amount_minor,
             currency),
    ADD CONSTRAINT payout_of_the_approved_plan
        FOREIGN KEY (withdrawal_id, plan_no)
        REFERENCES mt5credit.withdrawal (id, plan_no),
    ADD CONSTRAINT payout_to_the_destination
        FOREIGN KEY (withdrawal_id, provider, currency, destination)
        REFERENCES mt5credit.withdrawal (id, provider, currency,
                                         destination);

DO $$
DECLARE
    v_name  text;
BEGIN
    -- 018's key on the whole amount (named by PostgreSQL, so looked up)
    SELECT conname INTO STRICT v_name
    FROM pg_constraint
    WHERE conrelid = 'mt5credit.payout'::regclass AND contype = 'f'
      AND confrelid = 'mt5credit.withdrawal'::regclass
      AND array_length(conkey, 1) = 5;
    EXECUTE format('ALTER TABLE mt5credit.payout DROP CONSTRAINT %I',
                   v_name);
END
$$;

CREATE FUNCTION mt5credit.payout_whole_without_plan()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF NEW.plan_no IS NULL AND NOT EXISTS (
           SELECT 1 FROM withdrawal w
           WHERE w.id = NEW.withdrawal_id AND w.plan_no IS NULL
             AND w.amount_minor = NEW.amount_minor)
    THEN
        RAISE EXCEPTION 'payout of withdrawal %: a withdrawal with a plan '
                        'pays out its payout leg, and one without pays its '
                        'whole amount', NEW.withdrawal_id
            USING ERRCODE = 'MC080';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER payout_whole_without_plan
    BEFORE INSERT ON mt5credit.payout
    FOR EACH ROW EXECUTE FUNCTION mt5credit.payout_whole_without_plan();


--
-- 018's trigger function: the debit's deal recorded makes the legs'
-- executions, in that same transaction, so a done debit never lacks them.
--
CREATE OR REPLACE FUNCTION mt5credit.payout_after_debit()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w  withdrawal;
BEGIN
    SELECT * INTO STRICT w FROM withdrawal WHERE id = NEW.withdrawal_id;

    IF w.plan_no IS NULL THEN
        INSERT INTO payout (withdrawal_id, debit_credit_id, provider,
                            amount_minor, currency, destination)
        VALUES (w.id, NEW.id, w.provider, w.amount_minor, w.currency,
                w.destination);
        RETURN NULL;
    END IF;

    INSERT INTO withdrawal_refund (withdrawal_id, plan_no, leg,
                                   debit_credit_id, provider, credit_id,
                                   payment_key, amount_minor, currency,
                                   account_amount_minor)
    SELECT l.withdrawal_id, l.plan_no, l.leg, NEW.id, l.provider,
           l.credit_id, l.payment_key, l.amount_minor, l.currency,
           l.account_amount_minor
    FROM withdrawal_leg l
    WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no
      AND l.kind = 'refund'
    ORDER BY l.leg;

    INSERT INTO payout (withdrawal_id, debit_credit_id, provider,
                        amount_minor, currency, destination, plan_no, leg)
    SELECT w.id, NEW.id, l.provider, l.amount_minor, l.currency,
           w.destination, l.plan_no, l.leg
    FROM withdrawal_leg l
    WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no
      AND l.kind = 'payout';
    RETURN NULL;
END
$$;


-- what a sender needs to send (or look up) a refund leg
CREATE TYPE mt5credit.refund_item AS (
    id                    bigint,
    attempts              integer,
    status                text,
    reference             text,
    idempotency_key       text,
    provider              text,
    payment_key           text,
    amount_minor          bigint,
    currency              text,
    provider_refund_id    text,
    withdrawal_reference  text,
    debit_reference       text,
    first_sent_epoch      bigint,
    deployment_tag        text,
    card_hint             text
);

CREATE FUNCTION mt5credit.refund_item_of(p_id bigint)
RETURNS mt5credit.refund_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT r.id, r.attempts, r.status, r.reference,
           CASE WHEN r.deployment_tag IS NULL THEN r.idempotency_key
                ELSE 'mt5credit-' || r.deployment_tag || '-refund-'
                     || r.withdrawal_id || '-' || r.leg END,
           r.provider, r.payment_key, r.amount_minor, r.currency,
           r.provider_refund_id, w.reference,
           mt5_comment(c.deployment_tag, c.reference),
           extract(epoch FROM r.first_sent_at)::bigint, r.deployment_tag,
           r.card_hint
    FROM withdrawal_refund r
    JOIN withdrawal w ON w.id = r.withdrawal_id
    JOIN mt5_credit c ON c.id = r.debit_credit_id
    WHERE r.id = p_id
$$;


--
-- pending -> sending: the oldest pending leg of this provider, one atomic
-- statement (SKIP LOCKED: concurrent senders never share a row).  The
-- attempt number is the lease token for the calls below.
--
CREATE FUNCTION mt5credit.refund_claim(p_provider text, p_sender text,
    p_lease_seconds integer)
RETURNS SETOF mt5credit.refund_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second'
            USING ERRCODE = 'MC020';
    END IF;
    PERFORM set_actor(p_sender, '{"step": "claim"}');

    WITH next AS (
        SELECT id FROM withdrawal_refund
        WHERE status = 'pending' AND provider = p_provider
        ORDER BY id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE withdrawal_refund r
    SET status = 'sending', attempts = r.attempts + 1,
        claimed_by = left(p_sender, 200), claimed_at = clock_timestamp(),
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        first_sent_at = coalesce(r.first_sent_at, clock_timestamp()),
        next_check_at = NULL
    FROM next
    WHERE r.id = next.id AND r.status = 'pending'
    RETURNING r.id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN NEXT refund_item_of(v_id);
    END IF;
END
$$;


-- sending -> pending (nothing was sent), or -> unknown (it may have been)
CREATE FUNCTION mt5credit.refund_unsent(p_id bigint, p_attempt integer,
    p_to text, p_sender text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF p_to NOT IN ('pending', 'unknown') THEN
        RAISE EXCEPTION 'a refund being sent goes back to pending or to '
                        'unknown, not %', p_to USING ERRCODE = 'MC092';
    END IF;
    PERFORM set_actor(p_sender, p_detail);
    UPDATE withdrawal_refund
    SET status = p_to,
        lease_expires_at = CASE WHEN p_to = 'unknown'
                                THEN lease_expires_at END
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


-- a sender that died mid-send: its refund may have reached the provider
CREATE FUNCTION mt5credit.refund_sweep(p_sender text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
BEGIN
    PERFORM set_actor(p_sender,
                      '{"step": "sweep", "reason": "lease expired"}');
    UPDATE withdrawal_refund SET status = 'unknown'
    WHERE status = 'sending' AND lease_expires_at < clock_timestamp();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


-- a failed leg: the MT5 debit's share stands, nothing went back
CREATE FUNCTION mt5credit.refund_failed_case(r mt5credit.withdrawal_refund)
RETURNS void
LANGUAGE sql
SET search_path = mt5credit, pg_temp
AS $$
    SELECT open_case('refund_failed', 'critical',
        'refund_failed:' || r.reference,
        jsonb_build_object('refund', r.reference,
                           'payment', r.payment_key,
                           'provider_refund_id', r.provider_refund_id,
                           'refund_amount_minor', r.amount_minor,
                           'refund_currency', r.currency,
                           'failure_code', r.failure_code,
                           'failure_message', r.failure_message,
                           'note', 'this share of the MT5 debit stands and '
                                   'nothing went back to the client: '
                                   'return it with a correcting credit '
                                   '(two people), or pay it another way'),
        r.debit_credit_id, NULL, NULL, r.account_amount_minor,
        (SELECT currency FROM mt5_credit WHERE id = r.debit_credit_id));
$$;


--
-- What the provider said about the refund (its own object, checked by
-- the caller: our reference, payment, amount and currency), from the
-- status the caller saw it in.  Stripe's refund status decides: pending
-- and requires_action are accepted, succeeded is succeeded, failed and
-- canceled are a failure (a critical case).  Seen succeeded, it is
-- watched for p_watch_seconds, asked again every p_recheck_seconds: a
-- card refund can still fail.  Returns the new state, 'returned' for a
-- failure after success, or 'stale'.
--
CREATE FUNCTION mt5credit.refund_answered(p_id bigint, p_attempt integer,
    p_from text, p_refund_id text, p_status text, p_failure_code text,
    p_failure_message text, p_sender text, p_detail jsonb,
    p_recheck_seconds integer, p_watch_seconds integer)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r        withdrawal_refund;
    v_to     text;
    v_now    timestamptz := clock_timestamp();
    v_until  timestamptz;
BEGIN
    IF p_from NOT IN ('sending', 'unknown', 'accepted', 'succeeded') THEN
        RAISE EXCEPTION 'not a state a refund is answered in: %', p_from
            USING ERRCODE = 'MC092';
    END IF;

    v_to := CASE
            WHEN p_status IN ('pending', 'requires_action') THEN 'accepted'
            WHEN p_status = 'succeeded' THEN 'succeeded'
            WHEN p_status IN ('failed', 'canceled', 'declined') THEN 'failed'
            END;
    IF v_to IS NULL THEN
        RAISE EXCEPTION 'refund status "%" is not one we know', p_status
            USING ERRCODE = 'MC092';
    END IF;
    IF p_from = 'succeeded' AND v_to = 'accepted' THEN
        RAISE EXCEPTION 'refund %: succeeded, and now "%" at the provider: '
                        'a refund does not go back', p_id, p_status
            USING ERRCODE = 'MC092';
    END IF;

    PERFORM set_actor(p_sender, coalesce(p_detail, '{}')
                                || jsonb_build_object('provider_status',
                                                      p_status));

    SELECT * INTO r FROM withdrawal_refund
    WHERE id = p_id AND status = p_from AND attempts = p_attempt
      AND (provider_refund_id IS NULL OR provider_refund_id = p_refund_id)
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'stale';
    END IF;

    -- the watch starts when it is first seen succeeded, and never moves
    v_until := CASE WHEN v_to <> 'succeeded' OR p_from = 'succeeded'
                    THEN r.watch_until
                    WHEN p_watch_seconds > 0
                    THEN v_now + make_interval(secs => p_watch_seconds)
                    END;

    UPDATE withdrawal_refund
    SET status = v_to, provider_refund_id = p_refund_id,
        provider_status = p_status,
        failure_code = CASE WHEN v_to = 'failed'
                            THEN coalesce(p_failure_code, p_status) END,
        failure_message = CASE WHEN v_to = 'failed'
                               THEN left(p_failure_message, 1000) END,
        lease_expires_at = NULL,
        watch_until = v_until,
        next_check_at = CASE
            WHEN v_to = 'accepted'
                 OR (v_to = 'succeeded' AND v_until IS NOT NULL
                     AND v_now + make_interval(secs => p_recheck_seconds)
                         < v_until)
            THEN v_now + make_interval(secs => p_recheck_seconds)
            WHEN v_to = 'succeeded' AND v_until > v_now
            THEN v_until                -- one last look at the end
            END
    WHERE id = r.id
    RETURNING * INTO r;

    IF v_to = 'failed' THEN
        PERFORM refund_failed_case(r);
    END IF;
    RETURN CASE WHEN p_from = 'succeeded' AND v_to = 'failed' THEN 'returned'
                ELSE v_to END;
END
$$;


-- the card the refund went back to, once the provider named it
CREATE FUNCTION mt5credit.refund_card_hint(p_id bigint, p_hint text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    UPDATE withdrawal_refund SET card_hint = p_hint
    WHERE id = p_id AND card_hint IS NULL
      AND status IN ('accepted', 'succeeded');
    RETURN FOUND;
END
$$;


-- sending -> failed: the provider refused the request outright
CREATE FUNCTION mt5credit.refund_declined(p_id bigint, p_attempt integer,
    p_failure_code text, p_failure_message text, p_sender text,
    p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  withdrawal_refund;
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE withdrawal_refund
    SET status = 'failed', failure_code = p_failure_code,
        failure_message = left(p_failure_message, 1000),
        lease_expires_at = NULL
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt
    RETURNING * INTO r;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM refund_failed_case(r);
    RETURN true;
END
$$;


--
-- Refunds to look at: unknown ones past their lease and a margin (any
-- send under it has finished), accepted ones due for a status check, and
-- succeeded ones watched and due.  Unknown ones first.  Picking sets
-- next_check_at as a short lease of its own.
--
CREATE FUNCTION mt5credit.refund_check_due(p_provider text,
    p_margin_seconds integer, p_lookup_seconds integer, p_limit integer)
RETURNS SETOF mt5credit.refund_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    FOR v_id IN
        WITH due AS (
            SELECT id FROM withdrawal_refund
            WHERE provider = p_provider
              AND ((status = 'unknown'
                    AND lease_expires_at
                        + make_interval(secs => p_margin_seconds)
                        < clock_timestamp()
                    AND (next_check_at IS NULL
                         OR next_check_at <= clock_timestamp()))
                   OR (status = 'accepted'
                       AND (next_check_at IS NULL
                            OR next_check_at <= clock_timestamp()))
                   OR (status = 'succeeded'
                       AND next_check_at <= clock_timestamp()))
            ORDER BY status <> 'unknown', next_check_at NULLS FIRST, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE withdrawal_refund r
        SET next_check_at = CASE
                WHEN r.status = 'succeeded'
                     AND clock_timestamp() >= r.watch_until
                THEN NULL               -- this is the last look
                ELSE clock_timestamp()
                     + make_interval(secs => p_lookup_seconds) END
        FROM due
        WHERE r.id = due.id
        RETURNING r.id
    LOOP
        RETURN NEXT refund_item_of(v_id);
    END LOOP;
END
$$;


-- unknown -> pending: the provider's complete listing has no such refund
CREATE FUNCTION mt5credit.refund_absent(p_id bigint, p_attempt integer,
    p_sender text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE withdrawal_refund
    SET status = 'pending', next_check_at = NULL, lease_expires_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


--
-- A look that settled nothing (no complete answer, an answer that does
-- not match, two refunds with our reference): the state stays, the next
-- look backs off, and a person is told after p_max_lookups, or at once
-- for a conflict.  Returns whether a case was opened.
--
CREATE FUNCTION mt5credit.refund_check_failed(p_id bigint, p_attempt integer,
    p_case_kind text, p_why text, p_backoff_seconds integer,
    p_max_lookups integer, p_sender text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  withdrawal_refund;
BEGIN
    IF p_case_kind NOT IN ('refund_no_answer', 'refund_conflict') THEN
        RAISE EXCEPTION 'not a refund case: %', p_case_kind
            USING ERRCODE = 'MC092';
    END IF;

    UPDATE withdrawal_refund
    SET lookups = lookups + 1,
        next_check_at = clock_timestamp()
                        + least(make_interval(secs => p_backoff_seconds)
                                * 2 ^ least(lookups, 16),
                                interval '1 day')
    WHERE id = p_id AND attempts = p_attempt
      AND status IN ('unknown', 'accepted', 'succeeded')
    RETURNING * INTO r;
    IF NOT FOUND THEN
        RETURN false;
    END IF;

    IF p_case_kind = 'refund_no_answer' AND r.lookups < p_max_lookups THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_sender, '{"step": "lookup"}');
    PERFORM open_case(p_case_kind,
        CASE p_case_kind WHEN 'refund_conflict' THEN 'critical'
                         ELSE 'high' END,
        p_case_kind || ':' || r.reference,
        jsonb_build_object('refund', r.reference, 'status', r.status,
                           'payment', r.payment_key,
                           'lookups', r.lookups, 'last', p_why,
                           'seen_at', clock_timestamp()),
        r.debit_credit_id, NULL, NULL, r.account_amount_minor,
        (SELECT currency FROM mt5_credit WHERE id = r.debit_credit_id));
    RETURN true;
END
$$;


--
-- 006's Stripe mapping, with refunds that are ours told apart.  A refund
-- object with metadata.mt5credit_withdrawal was made by a refund sender
-- (no person and no dashboard sets it): it is the fact 'withdrawal_refund'
-- (payment_key: the refund id, deposit_ref: our leg reference, note: the
-- refund's status), whatever its status, in a charge.refunded listing or
-- in a refund.* event.  Other refund.* events stay unmapped: the charge's
-- own charge.refunded debits a client's refund, once.
--
CREATE OR REPLACE FUNCTION mt5credit.stripe_facts(p_type text, p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    o    jsonb := p_body #> '{data,object}';
    r    jsonb;
    ref  text;
BEGIN
    IF jsonb_typeof(o) IS DISTINCT FROM 'object' THEN
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'no data.object')::payment_fact;
        RETURN;
    END IF;

    CASE p_type
    WHEN 'checkout.session.completed',
         'checkout.session.async_payment_succeeded'
    THEN
        IF o->>'payment_status' IS DISTINCT FROM 'paid' THEN
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'payment_status is '
                         || coalesce(o->>'payment_status', 'absent')
                         || ': money not confirmed yet')::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('paid', json_text(o->'payment_intent'), NULL,
                     coalesce(json_text(o->'client_reference_id'),
                              json_text(o #> '{metadata,deposit_id}')),
                     json_minor(o->'amount_total'),
                     upper(json_text(o->'currency')),
                     'checkout session ' || coalesce(o->>'id', '?')
                    )::payment_fact;

    WHEN 'payment_intent.succeeded' THEN
        ref := json_text(o #> '{metadata,deposit_id}');

        IF o->>'status' IS DISTINCT FROM 'succeeded' OR ref IS NULL THEN
            -- a PaymentIntent made by Checkout carries no metadata unless
            -- the integration copies it; its checkout.session event will
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'PaymentIntent without metadata.deposit_id: '
                         'the checkout.session event credits it'
                        )::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('paid', json_text(o->'id'), NULL, ref,
                     json_minor(o->'amount_received'),
                     upper(json_text(o->'currency')),
                     'payment intent')::payment_fact;

    WHEN 'charge.refunded' THEN
        IF jsonb_typeof(o #> '{refunds,data}') = 'array' THEN
            FOR r IN SELECT * FROM jsonb_array_elements(o #> '{refunds,data}')
            LOOP
                IF r #> '{metadata,mt5credit_withdrawal}' IS NOT NULL THEN
                    RETURN NEXT stripe_leg_fact(r, o->'payment_intent');
                    CONTINUE;
                END IF;
                CONTINUE WHEN r->>'status' IS DISTINCT FROM 'succeeded';

                RETURN NEXT ('refund', json_text(r->'id'),
                             json_text(o->'payment_intent'), NULL,
                             json_minor(r->'amount'),
                             upper(json_text(r->'currency')),
                             'refund of charge ' || coalesce(o->>'id', '?')
                            )::payment_fact;
            END LOOP;
            RETURN;
        END IF;

        RETURN NEXT ('refund_total',
                     json_text(o->'id') || ':refunded:'
                         || json_minor(o->'amount_refunded'),
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount_refunded'),
                     upper(json_text(o->'currency')),
                     'cumulative amount_refunded of charge '
                     || coalesce(o->>'id', '?'))::payment_fact;

    WHEN 'refund.created', 'refund.updated', 'refund.failed' THEN
        IF o #> '{metadata,mt5credit_withdrawal}' IS NOT NULL THEN
            RETURN NEXT stripe_leg_fact(o, o->'payment_intent');
            RETURN;
        END IF;
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'a refund event: the charge''s charge.refunded debits '
                     'a refund, once')::payment_fact;

    WHEN 'charge.dispute.funds_withdrawn', 'charge.dispute.closed' THEN
        IF p_type = 'charge.dispute.closed'
           AND o->>'status' IS DISTINCT FROM 'lost'
        THEN
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'dispute closed as '
                         || coalesce(o->>'status', 'absent'))::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('chargeback', json_text(o->'id') || ':withdrawn',
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount'), upper(json_text(o->'currency')),
                     'dispute ' || coalesce(o->>'reason', ''))::payment_fact;

    WHEN 'charge.dispute.funds_reinstated' THEN
        RETURN NEXT ('chargeback_reversal', json_text(o->'id') || ':reinstated',
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount'), upper(json_text(o->'currency')),
                     'dispute funds reinstated')::payment_fact;

    ELSE
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'event type not mapped')::payment_fact;
    END CASE;
END
$$;

-- a refund object a refund sender made: our leg, never a debit
CREATE FUNCTION mt5credit.stripe_leg_fact(r jsonb, p_payment jsonb)
RETURNS mt5credit.payment_fact
LANGUAGE sql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT ('withdrawal_refund', json_text(r->'id'),
            coalesce(json_text(r->'payment_intent'), json_text(p_payment)),
            coalesce(json_text(r #> '{metadata,mt5credit_refund}'),
                     json_text(r #> '{metadata,mt5credit_withdrawal}')),
            json_minor(r->'amount'), upper(json_text(r->'currency')),
            coalesce(json_text(r->'status'), 'unknown') || ' '
            || coalesce(json_text(r #> '{metadata,mt5credit_deployment}'),
                        '-'))::mt5credit.payment_fact
$$;


--
-- A refund of ours seen in a webhook: never a debit.  Its leg (by the
-- provider's id, else our reference) is made due for a look now, so a
-- failure the provider reports is found by the sender's own query, not
-- taken from the body.  Our metadata without a leg of ours is a case (a
-- leg the database lost, or one made by hand with our metadata); another
-- deployment's is none of ours.
--
CREATE FUNCTION mt5credit.ingest_withdrawal_refund(p_provider text,
    f mt5credit.payment_fact, p_event bigint)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r      withdrawal_refund;
    v_tag  text := split_part(f.note, ' ', 2);
    v_case bigint;
BEGIN
    SELECT * INTO r FROM withdrawal_refund
    WHERE provider = p_provider
      AND (provider_refund_id = f.payment_key
           OR (reference = f.deposit_ref
               AND deployment_tag IS NOT DISTINCT FROM
                   nullif(v_tag, '-')))
    ORDER BY provider_refund_id = f.payment_key DESC NULLS LAST
    LIMIT 1
    FOR UPDATE;

    IF NOT FOUND THEN
        IF v_tag IS DISTINCT FROM coalesce((SELECT tag FROM deployment), '-')
        THEN
            RETURN ('ignored', NULL, 'refund ' || coalesce(f.payment_key, '?')
                    || ' was made by another deployment (' || v_tag
                    || '): not ours, never debited')::ingest_step;
        END IF;
        v_case := open_case('refund_leg_unknown', 'high',
                            'refund_leg_unknown:' || p_provider || ':'
                                || coalesce(f.payment_key, p_event::text),
                            jsonb_build_object('facts', to_jsonb(f)),
                            NULL, NULL, p_event, f.amount_minor,
                            f.currency);
        RETURN ('case_opened', NULL, 'refund ' || coalesce(f.payment_key, '?')
                || ' carries our withdrawal metadata ('
                || coalesce(f.deposit_ref, '?') || ') but no leg here has '
                || 'it: never debited; case ' || v_case)::ingest_step;
    END IF;

    IF r.status IN ('accepted', 'succeeded') THEN
        UPDATE withdrawal_refund SET next_check_at = clock_timestamp()
        WHERE id = r.id;
    END IF;

    RETURN ('ignored', NULL, 'refund ' || coalesce(f.payment_key, '?')
            || ' is leg ' || r.reference || ' of a withdrawal ('
            || split_part(f.note, ' ', 1) || ' at the provider, ' || r.status
            || ' here): never debited')::ingest_step;
END
$$;


--
-- 006's generic payload, with a payout rail's status webhooks:
--   {"id", "type": "payout.paid", "data": {"payout_id", "reference",
--    "status"}}  (payout.processing, .paid, .failed, .returned)
-- the fact 'payout_status' (payment_key: the provider's payout id,
-- deposit_ref: our reference, note: the status).
--
CREATE OR REPLACE FUNCTION mt5credit.standard_facts(p_type text,
    p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d       jsonb := p_body->'data';
    amount  bigint := json_minor(d->'amount_minor');
    cur     text := upper(json_text(d->'currency'));
    pay     text := json_text(d->'payment_id');
BEGIN
    CASE p_type
    WHEN 'payment.succeeded' THEN
        RETURN NEXT ('paid', pay, NULL, json_text(d->'deposit_reference'),
                     amount, cur, NULL)::payment_fact;

    WHEN 'payment.refunded' THEN
        RETURN NEXT ('refund', 'refund:' || json_text(d->'refund_id'), pay,
                     NULL, amount, cur, NULL)::payment_fact;

    WHEN 'payment.chargeback' THEN
        RETURN NEXT ('chargeback',
                     'chargeback:' || json_text(d->'chargeback_id'), pay,
                     NULL, amount, cur, NULL)::payment_fact;

    WHEN 'payment.chargeback_reversed' THEN
        RETURN NEXT ('chargeback_reversal',
                     'chargeback:' || json_text(d->'chargeback_id')
                         || ':reversed',
                     pay, NULL, amount, cur, NULL)::payment_fact;

    WHEN 'payout.processing', 'payout.paid', 'payout.failed',
         'payout.returned'
    THEN
        RETURN NEXT ('payout_status', json_text(d->'payout_id'), NULL,
                     json_text(d->'reference'), NULL, NULL,
                     coalesce(json_text(d->'status'), substr(p_type, 8))
                    )::payment_fact;

    ELSE
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'event type not mapped')::payment_fact;
    END CASE;
END
$$;


--
-- A payout rail's word on a payout of ours: never taken as the outcome.
-- The payout (by the provider's id, else our reference) is made due for
-- the sender's status query now; a payout we do not know is no money of
-- ours to move.
--
CREATE FUNCTION mt5credit.ingest_payout_status(p_provider text,
    f mt5credit.payment_fact, p_event bigint)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p  payout;
BEGIN
    SELECT * INTO p FROM payout
    WHERE provider = p_provider
      AND (provider_payout_id = f.payment_key OR reference = f.deposit_ref)
    ORDER BY provider_payout_id = f.payment_key DESC NULLS LAST
    LIMIT 1
    FOR UPDATE;

    IF NOT FOUND THEN
        RETURN ('ignored', NULL, 'payout ' || coalesce(f.payment_key, '?')
                || ' (' || coalesce(f.deposit_ref, '?') || ') is no payout '
                || 'of ours')::ingest_step;
    END IF;

    IF p.status IN ('accepted', 'paid') THEN
        UPDATE payout SET next_check_at = clock_timestamp()
        WHERE id = p.id;
    END IF;

    RETURN ('ignored', NULL, 'payout ' || coalesce(f.payment_key, '?')
            || ' is ' || p.reference || ', ' || coalesce(f.note, '?')
            || ' at the provider, ' || p.status || ' here: the sender '
            || 'asks the provider')::ingest_step;
END
$$;


--
-- 006's reversal step, with the withdrawal's legs kept out of it: a
-- refund fact that is one of our legs is not a debit; the cumulative
-- amount_refunded has our legs that may be at the provider taken off;
-- and the cap on what may be taken back counts what our legs refunded.
--
CREATE OR REPLACE FUNCTION mt5credit.ingest_reversal(p_provider text,
    f mt5credit.payment_fact, p_event bigint)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_orig       mt5_credit;
    v_id         bigint;
    v_case       bigint;
    v_kind       text;
    v_dir        text;
    v_amount     bigint := f.amount_minor;
    v_refunded   bigint;
    v_net_out    bigint;
    v_legs       bigint;
    v_account    bigint;
    v_facts      jsonb := to_jsonb(f);
BEGIN
    IF f.action = 'withdrawal_refund' THEN
        RETURN ingest_withdrawal_refund(p_provider, f, p_event);
    ELSIF f.action = 'payout_status' THEN
        RETURN ingest_payout_status(p_provider, f, p_event);
    END IF;

    IF f.payment_key IS NULL OR f.original_key IS NULL
       OR f.amount_minor IS NULL OR f.amount_minor <= 0
       OR f.currency IS NULL
    THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, f.action || ' event without keys, '
                'integer amount or currency: case ' || v_case)::ingest_step;
    END IF;

    SELECT * INTO v_orig FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.original_key
      AND kind = 'deposit'
    FOR UPDATE;

    IF NOT FOUND THEN
        v_case := open_case(f.action || '_without_credit', 'high',
                            'reversal_without_credit:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, f.action || ' of ' || f.original_key
                || ', which has no credit: case ' || v_case)::ingest_step;
    END IF;

    -- a listed refund whose id is a leg's: ours, already out of MT5
    IF f.action = 'refund' THEN
        SELECT reference INTO v_kind FROM withdrawal_refund
        WHERE provider = p_provider AND provider_refund_id = f.payment_key;
        IF FOUND THEN
            RETURN ('ignored', NULL, 'refund ' || f.payment_key || ' is leg '
                    || v_kind || ' of a withdrawal: never debited'
                   )::ingest_step;
        END IF;
    END IF;

    -- already recorded under this key (a re-delivery by another event)?
    SELECT id INTO v_id FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.payment_key;

    IF FOUND THEN
        RETURN ('already_credited', v_id, NULL)::ingest_step;
    END IF;

    IF f.currency <> v_orig.paid_currency THEN
        v_case := open_case('amount_mismatch', 'high',
                            'amount_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                'original_currency', v_orig.paid_currency),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, f.action || ' in ' || f.currency
                || ', payment was in ' || v_orig.paid_currency
                || ': case ' || v_case)::ingest_step;
    END IF;

    -- what already went back, in the paid currency
    SELECT coalesce(sum(paid_amount_minor)
                    FILTER (WHERE kind = 'refund'), 0),
           coalesce(sum(CASE direction WHEN 'debit' THEN paid_amount_minor
                                       ELSE -paid_amount_minor END), 0)
    INTO v_refunded, v_net_out
    FROM mt5_credit
    WHERE original_credit_id = v_orig.id;

    -- and what our legs may have refunded on it: sent, not failed (a leg
    -- in flight counts: the provider may have it before we know)
    SELECT coalesce(sum(amount_minor), 0) INTO v_legs
    FROM withdrawal_refund
    WHERE credit_id = v_orig.id
      AND status IN ('sending', 'unknown', 'accepted', 'succeeded');

    IF f.action = 'refund_total' THEN
        -- Stripe's cumulative amount_refunded: debit only the increase
        -- that is not ours
        v_amount := f.amount_minor - v_refunded - v_legs;

        IF v_amount <= 0 THEN
            RETURN ('ignored', NULL, 'cumulative refund ' || f.amount_minor
                    || ' already debited'
                    || CASE WHEN v_legs > 0
                            THEN ' or refunded by withdrawals'' legs ('
                                 || v_legs || ')' ELSE '' END)::ingest_step;
        END IF;
    END IF;

    IF f.action = 'chargeback_reversal' THEN
        IF NOT EXISTS (SELECT 1 FROM mt5_credit
                       WHERE original_credit_id = v_orig.id
                         AND kind = 'chargeback' AND direction = 'debit')
           OR v_amount > v_net_out
        THEN
            v_case := open_case('chargeback_reversal_without_debit', 'high',
                                'reversal_without_debit:' || p_provider
                                    || ':' || f.payment_key,
                                jsonb_build_object('facts', v_facts),
                                v_orig.id, v_orig.deposit_id, p_event);
            RETURN ('case_opened', NULL, 'reinstatement without a matching '
                    'chargeback debit: case ' || v_case)::ingest_step;
        END IF;

    ELSIF v_net_out + v_legs + v_amount > v_orig.paid_amount_minor THEN
        v_case := open_case('reversal_exceeds_payment', 'high',
                            'reversal_exceeds:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                'paid_amount_minor', v_orig.paid_amount_minor,
                                'already_reversed_minor', v_net_out,
                                'withdrawal_legs_minor', v_legs),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, f.action || ' of ' || v_amount
                || ' would take back more than was paid: case '
                || v_case)::ingest_step;
    END IF;

    -- pro rata on the cumulative net amount taken back (refunds and
    -- chargebacks, less reinstatements), so rounding never drifts: the
    -- account has always lost round(credited * net / paid), and once all
    -- was taken back, by refunds, chargebacks or both, exactly the
    -- credited amount has gone back
    IF f.action = 'chargeback_reversal' THEN
        v_account := round(v_orig.amount_minor::numeric * v_net_out
                           / v_orig.paid_amount_minor)
                     - round(v_orig.amount_minor::numeric
                             * (v_net_out - v_amount)
                             / v_orig.paid_amount_minor);
    ELSE
        v_account := round(v_orig.amount_minor::numeric
                           * (v_net_out + v_amount)
                           / v_orig.paid_amount_minor)
                     - round(v_orig.amount_minor::numeric * v_net_out
                             / v_orig.paid_amount_minor);
    END IF;

    IF v_account <= 0 THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts,
                                'converted_minor', v_account),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, 'converted amount is zero: case '
                || v_case)::ingest_step;
    END IF;

    v_kind := CASE WHEN f.action IN ('refund', 'refund_total') THEN 'refund'
                   ELSE 'chargeback' END;
    v_dir := CASE WHEN f.action = 'chargeback_reversal' THEN 'credit'
                  ELSE 'debit' END;

    INSERT INTO mt5_credit (kind, direction, original_credit_id, deposit_id,
                            provider, provider_payment_id, mt5_server,
                            mt5_login, amount_minor, currency,
                            paid_amount_minor, paid_currency, fx_rate,
                            fx_source, fx_at)
    VALUES (v_kind, v_dir, v_orig.id, v_orig.deposit_id, p_provider,
            f.payment_key, v_orig.mt5_server, v_orig.mt5_login, v_account,
            v_orig.currency, v_amount, v_orig.paid_currency, v_orig.fx_rate,
            v_orig.fx_source, v_orig.fx_at)
    RETURNING id INTO v_id;

    RETURN ('credit_created', v_id, NULL)::ingest_step;
END
$$;


--
-- 018's one word for the client, over every leg now: paid when every leg
-- has arrived (refunds succeeded, the payout paid), under review when a
-- leg failed, sent when every leg is at least with its provider.
--
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_progress(p_client_id text,
    p_reference text)
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT CASE
           WHEN w.status IN ('requested', 'prepared') THEN 'in_review'
           WHEN w.status IN ('rejected', 'cancelled') THEN w.status
           WHEN c.status = 'failed' THEN 'declined'
           WHEN c.status IS DISTINCT FROM 'done' OR l.n = 0 THEN 'processing'
           WHEN l.failed > 0 THEN 'under_review'
           WHEN l.arrived = l.n THEN 'paid'
           WHEN l.sent = l.n THEN 'sent'
           ELSE 'processing'
           END
    FROM withdrawal w
    LEFT JOIN mt5_credit c ON c.withdrawal_id = w.id AND c.kind = 'withdrawal'
    CROSS JOIN LATERAL (
        SELECT count(*) AS n,
               count(*) FILTER (WHERE s IN ('failed', 'rejected')) AS failed,
               count(*) FILTER (WHERE s IN ('succeeded', 'paid')) AS arrived,
               count(*) FILTER (WHERE s IN ('accepted', 'succeeded',
                                            'paid')) AS sent
        FROM (SELECT p.status AS s FROM payout p WHERE p.withdrawal_id = w.id
              UNION ALL
              SELECT r.status FROM withdrawal_refund r
              WHERE r.withdrawal_id = w.id) legs
    ) l
    WHERE w.client_id = p_client_id AND w.reference = p_reference
$$;


--
-- What the client sees, leg by leg: each refund to the payment it came
-- from, the bank transfer, and where each is.  Before the debit is done
-- the legs are the approved plan's, all "processing".
--
CREATE FUNCTION mt5credit.withdrawal_progress_legs(p_client_id text,
    p_reference text)
RETURNS TABLE (leg integer, kind text, progress text, amount_minor bigint,
               currency text, destination text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT l.leg, l.kind,
           CASE coalesce(r.status, p.status)
           WHEN 'succeeded' THEN 'refunded'
           WHEN 'paid' THEN 'paid'
           WHEN 'accepted' THEN CASE l.kind WHEN 'refund' THEN 'refund_sent'
                                            ELSE 'sent' END
           WHEN 'failed' THEN 'under_review'
           WHEN 'rejected' THEN 'under_review'
           ELSE 'processing'
           END,
           l.amount_minor, l.currency,
           CASE WHEN l.kind = 'payout' THEN w.destination
                WHEN r.card_hint IS NOT NULL
                THEN 'card ' || split_part(r.card_hint, ' ', 1) || ' …'
                     || split_part(r.card_hint, ' ', 2)
                ELSE 'the payment ' || d.reference || ' of '
                     || to_char(c.created_at, 'YYYY-MM-DD') END
    FROM withdrawal w
    JOIN withdrawal_leg l ON l.withdrawal_id = w.id AND l.plan_no = w.plan_no
    LEFT JOIN withdrawal_refund r ON r.withdrawal_id = w.id AND r.leg = l.leg
    LEFT JOIN payout p ON p.withdrawal_id = w.id AND p.leg = l.leg
    LEFT JOIN mt5_credit c ON c.id = l.credit_id
    LEFT JOIN deposit d ON d.id = c.deposit_id
    WHERE w.client_id = p_client_id AND w.reference = p_reference
      AND w.status = 'approved'
    ORDER BY l.leg
$$;



--
-- 021's work_status(), with the refund legs beside the payouts: an
-- unknown refund ages in `mt5credit status` and its metrics as a payout
-- does.
--
CREATE OR REPLACE FUNCTION mt5credit.work_status()
RETURNS TABLE (metric text, kind text, status text, value double precision)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT 'credits', c.kind, c.status, count(*)::double precision
    FROM mt5_credit c GROUP BY c.kind, c.status
    UNION ALL
    SELECT 'oldest_age_seconds', NULL, c.status,
           coalesce(extract(epoch FROM now() - min(c.created_at)), 0)
    FROM mt5_credit c
    WHERE c.status IN ('pending', 'claimed', 'unknown')
    GROUP BY c.status
    UNION ALL
    SELECT 'open_cases', k.kind, k.severity, count(*)::double precision
    FROM "case" k WHERE k.status <> 'resolved'
    GROUP BY k.kind, k.severity
    UNION ALL
    SELECT 'payouts', NULL, p.status, count(*)::double precision
    FROM payout p GROUP BY p.status
    UNION ALL
    SELECT 'payout_oldest_age_seconds', NULL, p.status,
           coalesce(extract(epoch FROM now() - min(p.created_at)), 0)
    FROM payout p
    WHERE p.status IN ('pending', 'sending', 'unknown', 'accepted')
    GROUP BY p.status
    UNION ALL
    SELECT 'refunds', NULL, r.status, count(*)::double precision
    FROM withdrawal_refund r GROUP BY r.status
    UNION ALL
    SELECT 'refund_oldest_age_seconds', NULL, r.status,
           coalesce(extract(epoch FROM now() - min(r.created_at)), 0)
    FROM withdrawal_refund r
    WHERE r.status IN ('pending', 'sending', 'unknown', 'accepted')
    GROUP BY r.status
    UNION ALL
    -- cumulative buckets, as Prometheus histograms are
    SELECT 'latency_bucket', NULL, b.le,
           count(l.s) FILTER (WHERE b.le = '+Inf' OR l.s <= b.le::numeric)
    FROM (VALUES ('0.05'), ('0.1'), ('0.25'), ('0.5'), ('1'), ('2.5'),
                 ('5'), ('10'), ('30'), ('60'), ('300'), ('+Inf')) AS b (le)
    LEFT JOIN (SELECT extract(epoch FROM c.updated_at - c.created_at) AS s
               FROM mt5_credit c
               WHERE c.created_at > now() - interval '1 hour'
                 AND c.status = 'done') l ON true
    GROUP BY b.le
    UNION ALL
    SELECT 'latency_sum', NULL, NULL,
           coalesce(sum(extract(epoch FROM c.updated_at - c.created_at)), 0)
    FROM mt5_credit c
    WHERE c.created_at > now() - interval '1 hour' AND c.status = 'done'
    UNION ALL
    SELECT 'latency_count', NULL, NULL, count(*)::double precision
    FROM mt5_credit c
    WHERE c.created_at > now() - interval '1 hour' AND c.status = 'done'
$$;


--
-- 027's deposit_refund_state() (the return page), with the withdrawals'
-- refund legs: a deposit given back by a withdrawal reads refunded too.
-- A leg counts once it is sent and not failed; it is settled when it
-- succeeded.  Amounts in the currency paid, as in 027.
--
CREATE OR REPLACE FUNCTION mt5credit.deposit_refund_state(p_client_id text,
    p_reference text)
RETURNS TABLE (reference text, refund_state text, refunded_minor bigint,
               open_count integer)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    WITH d AS (
        SELECT d.id, d.reference, d.amount_minor FROM deposit d
        WHERE d.client_id = p_client_id AND d.reference = p_reference
    ), back AS (
        SELECT r.deposit_id,
               CASE r.direction WHEN 'debit' THEN r.paid_amount_minor
                                ELSE -r.paid_amount_minor END AS amount,
               r.status = 'done' AS settled
        FROM mt5_credit r
        WHERE r.deposit_id IN (SELECT id FROM d)
          AND r.kind IN ('refund', 'chargeback')
        UNION ALL
        SELECT c.deposit_id, wr.amount_minor, wr.status = 'succeeded'
        FROM withdrawal_refund wr
        JOIN mt5_credit c ON c.id = wr.credit_id
        WHERE c.deposit_id IN (SELECT id FROM d)
          AND wr.status IN ('sending', 'unknown', 'accepted', 'succeeded')
    )
    SELECT d.reference,
           CASE
           WHEN count(b.deposit_id) = 0 THEN 'none'
           WHEN count(b.deposit_id) FILTER (WHERE NOT b.settled) > 0
           THEN 'refunding'
           WHEN coalesce(sum(b.amount), 0) >= d.amount_minor THEN 'refunded'
           WHEN coalesce(sum(b.amount), 0) > 0 THEN 'partially_refunded'
           ELSE 'none'
           END,
           coalesce(sum(b.amount) FILTER (WHERE b.settled), 0)::bigint,
           (count(b.deposit_id) FILTER (WHERE NOT b.settled))::integer
    FROM d
    LEFT JOIN back b ON b.deposit_id = d.id
    GROUP BY d.id, d.reference, d.amount_minor
$$;


--
-- 042's withdrawal_show() for the desk, with each leg as it was sent.
--
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_show(p_reference text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT jsonb_build_object(
        'reference', w.reference, 'status', w.status,
        'client_id', w.client_id, 'provider', w.provider,
        'mt5_server', w.mt5_server, 'mt5_login', w.mt5_login,
        'amount_minor', w.amount_minor, 'currency', w.currency,
        'destination', w.destination, 'created_at', w.created_at,
        'prepared_by', w.prepared_by, 'prepared_at', w.prepared_at,
        'prepared_digest', w.prepared_digest,
        'approved_by', w.approved_by, 'approved_at', w.approved_at,
        'note', w.note, 'plan_no', w.plan_no,
        'plan', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'leg', l.leg, 'kind', l.kind, 'provider', l.provider,
                'payment', l.payment_key, 'amount_minor', l.amount_minor,
                'currency', l.currency,
                'account_amount_minor', l.account_amount_minor,
                'fx_rate', l.fx_rate) ORDER BY l.leg)
            FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no), '[]'),
        'debit', (SELECT jsonb_build_object('reference', c.reference,
                                            'status', c.status,
                                            'deal', c.mt5_deal_ticket)
                  FROM mt5_credit c
                  WHERE c.withdrawal_id = w.id AND c.kind = 'withdrawal'),
        -- each leg as sent: where it is, under which key, what the
        -- provider calls it
        'sent', coalesce((SELECT jsonb_agg(x.o ORDER BY x.leg)
            FROM (SELECT r.leg, jsonb_build_object('leg', r.leg,
                         'kind', 'refund', 'reference', r.reference,
                         'status', r.status, 'attempts', r.attempts,
                         'idempotency_key', r.idempotency_key,
                         'provider_id', r.provider_refund_id,
                         'card', r.card_hint,
                         'failure_code', r.failure_code) AS o
                  FROM withdrawal_refund r WHERE r.withdrawal_id = w.id
                  UNION ALL
                  SELECT coalesce(p.leg, 1), jsonb_build_object(
                         'leg', p.leg, 'kind', 'payout',
                         'reference', p.reference, 'status', p.status,
                         'attempts', p.attempts,
                         'idempotency_key', p.idempotency_key,
                         'provider_id', p.provider_payout_id,
                         'failure_code', p.failure_code)
                  FROM payout p WHERE p.withdrawal_id = w.id) x), '[]'))
    FROM withdrawal w
    WHERE w.reference = p_reference
$$;

REVOKE ALL ON FUNCTION
    mt5credit.refund_claim(text, text, integer),
    mt5credit.refund_unsent(bigint, integer, text, text, jsonb),
    mt5credit.refund_sweep(text),
    mt5credit.refund_answered(bigint, integer, text, text, text, text, text,
                              text, jsonb, integer, integer),
    mt5credit.refund_declined(bigint, integer, text, text, text, jsonb),
    mt5credit.refund_card_hint(bigint, text),
    mt5credit.refund_check_due(text, integer, integer, integer),
    mt5credit.refund_absent(bigint, integer, text, jsonb),
    mt5credit.refund_check_failed(bigint, integer, text, text, integer,
                                  integer, text),
    mt5credit.withdrawal_progress_legs(text, text)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    mt5credit.refund_claim(text, text, integer),
    mt5credit.refund_unsent(bigint, integer, text, text, jsonb),
    mt5credit.refund_sweep(text),
    mt5credit.refund_answered(bigint, integer, text, text, text, text, text,
                              text, jsonb, integer, integer),
    mt5credit.refund_declined(bigint, integer, text, text, text, jsonb),
    mt5credit.refund_card_hint(bigint, text),
    mt5credit.refund_check_due(text, integer, integer, integer),
    mt5credit.refund_absent(bigint, integer, text, jsonb),
    mt5credit.refund_check_failed(bigint, integer, text, text, integer,
                                  integer, text)
    TO mt5credit_worker;

GRANT EXECUTE ON FUNCTION mt5credit.withdrawal_progress_legs(text, text)
    TO mt5credit_portal;
