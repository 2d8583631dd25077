--
-- 095: signed outbound events from a transactional outbox (issue 34).
--
-- The broker's CRM (support, introducing brokers' commissions, the
-- client's notifications) must hear that a deposit was credited, failed,
-- was held, refunded or charged back, that a withdrawal was approved,
-- debited and paid, and that a case was opened.  Polling
-- deposit_status() tells the portal; it tells no other system, and
-- alert_url is an unsigned POST meant for people.
--
-- Each such change writes its event here, in the transaction that makes
-- the change, by a trigger on the row that records it (a history row, a
-- withdrawal's status, a case).  So an event exists exactly when its
-- change committed: a crash cannot lose one, a rollback cannot leave
-- one.  `mt5credit outbound` (batch/outbound/) delivers them, signed per
-- Standard Webhooks, at least once, each under its own stable
-- `webhook-id`.
--
--   outbound_endpoint   a receiver the sender is configured for (its url
--                       and secrets are in the sender's configuration, not
--                       here); whether it is failing, or disabled
--   outbound_message    one event: type, subject, sequence, the body as
--                       signed and sent (fixed at birth: a replay sends
--                       the same bytes)
--   outbound_sequence   each subject's last sequence number
--   outbound_delivery   one message to one endpoint: pending, sending
--                       (a lease), delivered or exhausted
--   outbound_attempt    every try and its answer; append-only
--   outbound_replay     who asked for what to be sent again, and why
--
-- Ordering.  A subject is a deposit (deposit:<id>), a withdrawal
-- (withdrawal:<id>) or a case (case:<id>).  Its sequence
-- number is taken from a row every writer of that subject updates, so
-- they take it one at a time, in the order their transactions commit: a
-- receiver that sorts a subject's events by `sequence` has them in the
-- order they happened.  Deliveries are not ordered; the number is.
--
-- The webhook-id is random ('msg_' and a UUID), not the row's number: a
-- database that went back in time (a failover, a restore) reuses row
-- numbers, and a receiver deduplicating on the id would drop a later,
-- different event that took one (docs/portal-integration.md).
--

SET ROLE mt5credit_owner;


CREATE TABLE mt5credit.outbound_endpoint (
    name             text        PRIMARY KEY
                                 CHECK (name ~ '^[A-Za-z0-9_.-]{1,63}$'),
    registered_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    registered_by    text        NOT NULL,
    -- the first failure since its last success; NULL while it answers
    failing_since    timestamptz,
    last_success_at  timestamptz,
    disabled_at      timestamptz,
    disabled_why     text,
    -- taken out of service by a person: no new event is made for it
    retired_at       timestamptz,
    CONSTRAINT outbound_endpoint_disabled_why
        CHECK ((disabled_at IS NULL) = (disabled_why IS NULL)),
    CONSTRAINT outbound_endpoint_retired_is_disabled
        CHECK (retired_at IS NULL OR disabled_at IS NOT NULL)
);

COMMENT ON TABLE mt5credit.outbound_endpoint IS
    'A receiver of outbound events, registered by the sender configured '
    'for it (095); its url and secrets are the sender''s configuration. '
    'Disabled after failing for outbound_disable_after; enabled again by '
    'a person (outbound_endpoint_enable()); retired by a person when it '
    'is gone (outbound_endpoint_retire()): no new event is made for it.';


CREATE TABLE mt5credit.outbound_message (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id  text        NOT NULL UNIQUE
                            DEFAULT 'msg_' || replace(gen_random_uuid()::text,
                                                      '-', '')
                            CHECK (webhook_id ~ '^msg_[0-9a-f]{32}$'),
    type        text        NOT NULL CHECK (type IN (
                    'deposit.credited', 'deposit.failed', 'deposit.held',
                    'deposit.returned', 'deposit.refunded',
                    'deposit.chargeback', 'deposit.chargeback_reversed',
                    'withdrawal.approved', 'withdrawal.rejected',
                    'withdrawal.cancelled', 'withdrawal.debited',
                    'withdrawal.paid', 'withdrawal.failed',
                    'case.opened')),
    subject     text        NOT NULL
                            CHECK (subject ~ '^(deposit|withdrawal|case):[0-9]+$'),
    seq         integer     NOT NULL CHECK (seq > 0),
    body        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (subject, seq)
);

COMMENT ON TABLE mt5credit.outbound_message IS
    'One outbound event, written by the transaction that made its change '
    '(095).  body is what is signed and sent, every time; never changed.';


CREATE TABLE mt5credit.outbound_sequence (
    subject  text     PRIMARY KEY,
    last     integer  NOT NULL CHECK (last > 0)
);


CREATE TABLE mt5credit.outbound_delivery (
    message_id        bigint      NOT NULL
                                  REFERENCES mt5credit.outbound_message (id),
    endpoint          text        NOT NULL
                                  REFERENCES mt5credit.outbound_endpoint (name),
    status            text        NOT NULL DEFAULT 'pending'
                                  CHECK (status IN ('pending', 'sending',
                                                    'delivered', 'exhausted')),
    -- tries since it was (re)queued: the retry schedule's position
    attempts          integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_by        text,
    lease_expires_at  timestamptz,
    last_http_status  integer,
    last_error        text,
    delivered_at      timestamptz,
    exhausted_at      timestamptz,
    PRIMARY KEY (message_id, endpoint),
    CONSTRAINT outbound_delivery_lease
        CHECK ((status = 'sending')
               = (lease_expires_at IS NOT NULL AND claimed_by IS NOT NULL)),
    CONSTRAINT outbound_delivery_delivered
        CHECK ((status = 'delivered') = (delivered_at IS NOT NULL)),
    CONSTRAINT outbound_delivery_exhausted
        CHECK ((status = 'exhausted') = (exhausted_at IS NOT NULL))
);

CREATE INDEX outbound_delivery_due
    ON mt5credit.outbound_delivery (endpoint, next_at)
    WHERE status = 'pending';
-- what is not delivered, by endpoint (outbound_backlog(), every round)
CREATE INDEX outbound_delivery_open
    ON mt5credit.outbound_delivery (endpoint, status)
    WHERE status <> 'delivered';
CREATE INDEX outbound_delivery_sending
    ON mt5credit.outbound_delivery (lease_expires_at)
    WHERE status = 'sending';


CREATE TABLE mt5credit.outbound_attempt (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id   bigint      NOT NULL,
    endpoint     text        NOT NULL,
    attempt      integer     NOT NULL CHECK (attempt > 0),
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    sender       text        NOT NULL,
    outcome      text        NOT NULL CHECK (outcome IN ('delivered',
                                 'failed', 'exhausted', 'lease_expired')),
    http_status  integer,
    error        text,
    FOREIGN KEY (message_id, endpoint)
        REFERENCES mt5credit.outbound_delivery (message_id, endpoint)
);

CREATE INDEX outbound_attempt_delivery
    ON mt5credit.outbound_attempt (message_id, endpoint);


CREATE TABLE mt5credit.outbound_replay (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    replayed_by  text        NOT NULL DEFAULT mt5credit.person(),
    replayed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason       text        NOT NULL CHECK (btrim(reason) <> ''),
    webhook_id   text,
    since        timestamptz,
    endpoint     text,
    deliveries   integer     NOT NULL,
    CHECK ((webhook_id IS NULL) <> (since IS NULL))
);


-- the attempts and replays are the record: never changed, never deleted
CREATE FUNCTION mt5credit.outbound_append_only() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME
        USING ERRCODE = 'MC160';
END
$$;

CREATE TRIGGER outbound_attempt_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.outbound_attempt
    FOR EACH ROW EXECUTE FUNCTION mt5credit.outbound_append_only();
CREATE TRIGGER outbound_attempt_no_truncate
    BEFORE TRUNCATE ON mt5credit.outbound_attempt
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.outbound_append_only();
CREATE TRIGGER outbound_replay_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.outbound_replay
    FOR EACH ROW EXECUTE FUNCTION mt5credit.outbound_append_only();
CREATE TRIGGER outbound_replay_no_truncate
    BEFORE TRUNCATE ON mt5credit.outbound_replay
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.outbound_append_only();

-- a message's facts are what was sent: fixed
CREATE FUNCTION mt5credit.outbound_message_fixed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'an outbound message is never changed or deleted: '
                    'it is what its receivers were sent'
        USING ERRCODE = 'MC160';
END
$$;

CREATE TRIGGER outbound_message_fixed
    BEFORE UPDATE OR DELETE ON mt5credit.outbound_message
    FOR EACH ROW EXECUTE FUNCTION mt5credit.outbound_message_fixed();


--
-- The one writer of the outbox.  The subject's sequence row is taken
-- (and held to COMMIT) before the number is read, so two transactions on
-- one deposit number their events in commit order.  Every registered
-- endpoint gets a delivery, a disabled one too: it is sent when a person
-- enables the endpoint again, nothing is lost while it is off.  Only a
-- retired one (a person said it is gone) gets none.
--
CREATE FUNCTION mt5credit.outbound_emit(p_type text, p_subject text,
    p_data jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_seq  integer;
    v_id   bigint;
    v_at   timestamptz := clock_timestamp();
BEGIN
    INSERT INTO outbound_sequence AS s (subject, last)
    VALUES (p_subject, 1)
    ON CONFLICT (subject) DO UPDATE SET last = s.last + 1
    RETURNING s.last INTO v_seq;

    INSERT INTO outbound_message (type, subject, seq, body, created_at)
    VALUES (p_type, p_subject, v_seq,
            jsonb_build_object(
                'type', p_type,
                'timestamp', to_char(v_at AT TIME ZONE 'UTC',
                                     'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'data', p_data || jsonb_build_object('subject', p_subject,
                                                     'sequence', v_seq))::text,
            v_at)
    RETURNING id INTO v_id;

    INSERT INTO outbound_delivery (message_id, endpoint, next_at)
    SELECT v_id, e.name, v_at FROM outbound_endpoint e
    WHERE e.retired_at IS NULL;

    RETURN v_id;
END
$$;

REVOKE ALL ON FUNCTION mt5credit.outbound_emit(text, text, jsonb)
    FROM PUBLIC;


-- what a CRM needs of a credit, and of the deposit or withdrawal it is of
CREATE FUNCTION mt5credit.outbound_credit_data(p_credit bigint)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'deposit', d.reference,
        'withdrawal', w.reference,
        'client_id', coalesce(d.client_id, w.client_id),
        'mt5_server', c.mt5_server,
        'mt5_login', c.mt5_login,
        'credit', c.reference,
        'kind', c.kind,
        'direction', c.direction,
        'amount_minor', c.amount_minor,
        'currency', c.currency,
        'paid_amount_minor', c.paid_amount_minor,
        'paid_currency', c.paid_currency,
        -- exact: a string, never a float
        'fx_rate', c.fx_rate::text,
        'provider', c.provider,
        'provider_payment_id', c.provider_payment_id,
        'mt5_deal_ticket', c.mt5_deal_ticket,
        'status', c.status))
    FROM mt5_credit c
    LEFT JOIN deposit d ON d.id = c.deposit_id
    LEFT JOIN withdrawal w ON w.id = c.withdrawal_id
    WHERE c.id = p_credit
$$;


--
-- A credit's status change, from the credit row as it now is (its
-- history row is written before the row changes, without the deal
-- ticket).  Only the statuses a CRM hears of fire it (the WHENs below):
-- a credit born pending, or claimed, or unknown, costs nothing but the
-- test.
--
CREATE FUNCTION mt5credit.outbound_on_credit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_from  text := CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END;
    v_type  text;
BEGIN
    v_type := CASE
        WHEN NEW.kind = 'deposit' THEN
            CASE NEW.status
            WHEN 'done' THEN 'deposit.credited'
            WHEN 'held' THEN 'deposit.held'
            -- two people returned a held payment to its source (079)
            WHEN 'failed' THEN CASE WHEN v_from = 'held'
                                    THEN 'deposit.returned'
                                    ELSE 'deposit.failed' END
            END
        WHEN NEW.kind = 'refund' AND NEW.status = 'done'
            THEN 'deposit.refunded'
        WHEN NEW.kind = 'chargeback' AND NEW.status = 'done' THEN
            CASE WHEN NEW.direction = 'debit' THEN 'deposit.chargeback'
                 ELSE 'deposit.chargeback_reversed' END
        WHEN NEW.kind = 'withdrawal' THEN
            CASE NEW.status
            WHEN 'done' THEN 'withdrawal.debited'
            WHEN 'failed' THEN 'withdrawal.failed'
            END
        END;

    IF v_type IS NULL THEN
        RETURN NULL;
    END IF;

    PERFORM outbound_emit(v_type,
        CASE WHEN NEW.deposit_id IS NOT NULL THEN 'deposit:' || NEW.deposit_id
             ELSE 'withdrawal:' || NEW.withdrawal_id END,
        outbound_credit_data(NEW.id)
            || jsonb_build_object('from_status', v_from,
                                  'at', clock_timestamp()));
    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_outbound_born
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.status IN ('done', 'failed', 'held'))
    EXECUTE FUNCTION mt5credit.outbound_on_credit();

CREATE TRIGGER mt5_credit_outbound
    AFTER UPDATE OF status ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('done', 'failed', 'held'))
    EXECUTE FUNCTION mt5credit.outbound_on_credit();


-- the provider said the payment failed (013, 014)
CREATE FUNCTION mt5credit.outbound_on_deposit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM outbound_emit('deposit.failed', 'deposit:' || d.id,
        jsonb_build_object('deposit', d.reference,
                           'client_id', d.client_id,
                           'mt5_server', d.mt5_server,
                           'mt5_login', d.mt5_login,
                           'amount_minor', d.amount_minor,
                           'currency', d.currency,
                           'provider', d.provider,
                           'status', NEW.to_status,
                           'from_status', NEW.from_status,
                           'reason', 'payment_failed',
                           'at', NEW.at))
    FROM deposit d WHERE d.id = NEW.deposit_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER deposit_history_outbound
    AFTER INSERT ON mt5credit.deposit_history
    FOR EACH ROW
    WHEN (NEW.to_status = 'failed')
    EXECUTE FUNCTION mt5credit.outbound_on_deposit();


--
-- A withdrawal decided by the desk, or cancelled by its client.  A hold
-- is not sent, nor its case, nor that a rejection followed one: the
-- client is not told of a hold (086), and a CRM may pass what it hears
-- to the client.
--
CREATE FUNCTION mt5credit.outbound_on_withdrawal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM outbound_emit('withdrawal.' || NEW.status,
        'withdrawal:' || NEW.id,
        jsonb_strip_nulls(jsonb_build_object(
            'withdrawal', NEW.reference,
            'client_id', NEW.client_id,
            'mt5_server', NEW.mt5_server,
            'mt5_login', NEW.mt5_login,
            'amount_minor', NEW.amount_minor,
            'currency', NEW.currency,
            'provider', NEW.provider,
            'status', NEW.status,
            -- a hold reads as the request it was (086's client view)
            'from_status', CASE WHEN OLD.status = 'held' THEN 'requested'
                                ELSE OLD.status END,
            'plan_no', NEW.plan_no,
            'at', NEW.updated_at)));
    RETURN NULL;
END
$$;

CREATE TRIGGER withdrawal_outbound
    AFTER UPDATE OF status ON mt5credit.withdrawal
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('approved', 'rejected', 'cancelled'))
    EXECUTE FUNCTION mt5credit.outbound_on_withdrawal();


-- a withdrawal's leg paid to the client, or failed (018, 034, 043), from
-- the leg's row as it now is (the provider's id and failure with it)
CREATE FUNCTION mt5credit.outbound_on_leg() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_leg   jsonb := to_jsonb(NEW);
    v_paid  boolean := NEW.status IN ('paid', 'succeeded');
BEGIN
    PERFORM outbound_emit(
        CASE WHEN v_paid THEN 'withdrawal.paid' ELSE 'withdrawal.failed' END,
        'withdrawal:' || NEW.withdrawal_id,
        jsonb_strip_nulls(jsonb_build_object(
            'withdrawal', w.reference, 'client_id', w.client_id,
            'mt5_server', w.mt5_server, 'mt5_login', w.mt5_login,
            'withdrawal_amount_minor', w.amount_minor,
            'withdrawal_currency', w.currency,
            'leg', NEW.leg, 'leg_kind', NEW.leg_kind,
            'leg_reference', NEW.reference,
            'amount_minor', NEW.amount_minor, 'currency', NEW.currency,
            'provider', NEW.provider,
            'provider_payout_id', v_leg->>'provider_payout_id',
            'provider_refund_id', v_leg->>'provider_refund_id',
            'failure_code', NEW.failure_code,
            'status', NEW.status, 'from_status', OLD.status,
            'at', clock_timestamp())))
    FROM withdrawal w WHERE w.id = NEW.withdrawal_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER payout_outbound
    AFTER UPDATE OF status ON mt5credit.payout
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('paid', 'rejected'))
    EXECUTE FUNCTION mt5credit.outbound_on_leg();

CREATE TRIGGER withdrawal_refund_outbound
    AFTER UPDATE OF status ON mt5credit.withdrawal_refund
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('succeeded', 'failed'))
    EXECUTE FUNCTION mt5credit.outbound_on_leg();


--
-- A case: work for a person.  Its subject is the case itself, never its
-- deposit's or withdrawal's: a case is opened by transactions that hold
-- none of that deposit's rows (reconciliation opens its cases, then
-- replays events that lock credits), and taking the deposit's sequence
-- row there would order that lock before the credit's, against every
-- other writer's (a deadlock).  The deposit and withdrawal are named in
-- its data.  A case seen again (open_case()'s ON CONFLICT) is an UPDATE:
-- not sent.
--
CREATE FUNCTION mt5credit.outbound_on_case() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_data  jsonb := '{}';
BEGIN
    IF NEW.credit_id IS NOT NULL THEN
        v_data := coalesce(outbound_credit_data(NEW.credit_id), '{}');
    END IF;

    v_data := v_data || jsonb_strip_nulls(jsonb_build_object(
        'case_id', NEW.id, 'case_kind', NEW.kind,
        'severity', NEW.severity,
        'deposit', coalesce((SELECT reference FROM deposit
                             WHERE id = NEW.deposit_id), v_data->>'deposit'),
        'case_amount_minor', NEW.amount_minor,
        'case_currency', NEW.currency,
        'at', NEW.opened_at));

    PERFORM outbound_emit('case.opened', 'case:' || NEW.id, v_data);
    RETURN NULL;
END
$$;

-- not a withdrawal's hold: the client is not told of one (086), and a
-- CRM may pass on what it hears
CREATE TRIGGER case_outbound
    AFTER INSERT ON mt5credit."case"
    FOR EACH ROW
    WHEN (NEW.kind <> 'withdrawal_hold')
    EXECUTE FUNCTION mt5credit.outbound_on_case();


-- ---------------------------------------------------------------------
-- The sender (mt5credit_outbound)
-- ---------------------------------------------------------------------

-- an endpoint of the sender's configuration; from now on it gets every
-- new event (the earlier ones: outbound_replay_since())
CREATE FUNCTION mt5credit.outbound_endpoint_register(p_name text)
RETURNS TABLE (disabled_at timestamptz, disabled_why text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    INSERT INTO outbound_endpoint (name, registered_by)
    VALUES (p_name, session_user)
    ON CONFLICT (name) DO NOTHING;

    RETURN QUERY SELECT e.disabled_at, e.disabled_why
                 FROM outbound_endpoint e WHERE e.name = p_name;
END
$$;


-- a sender that died mid-send leaves its delivery to be sent again:
-- at least once, under the same webhook-id
CREATE FUNCTION mt5credit.outbound_sweep(p_sender text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
BEGIN
    WITH gone AS (
        UPDATE outbound_delivery d
        SET status = 'pending', next_at = clock_timestamp(),
            claimed_by = NULL, lease_expires_at = NULL,
            last_error = 'lease expired: its sender stopped mid-send'
        WHERE d.status = 'sending'
          AND d.lease_expires_at < clock_timestamp()
        RETURNING d.message_id, d.endpoint, d.attempts
    )
    INSERT INTO outbound_attempt (message_id, endpoint, attempt, sender,
                                  outcome, error)
    SELECT g.message_id, g.endpoint, g.attempts, p_sender, 'lease_expired',
           'its sender stopped mid-send'
    FROM gone g;

    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


--
-- The due deliveries of these endpoints, oldest due first, each leased
-- to this sender and counted as a try.  An endpoint that is disabled
-- gets nothing.
--
CREATE FUNCTION mt5credit.outbound_claim(p_sender text, p_endpoints text[],
    p_lease_seconds integer, p_limit integer)
RETURNS TABLE (message_id bigint, endpoint text, webhook_id text,
               attempt integer, type text, subject text, seq integer,
               body text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF p_lease_seconds < 1 OR p_limit < 1 THEN
        RAISE EXCEPTION 'a lease of at least a second, at least one '
                        'delivery' USING ERRCODE = 'MC161';
    END IF;

    RETURN QUERY
    WITH due AS (
        -- the enabled ones first: a disabled endpoint's backlog, however
        -- long, is never walked
        SELECT d.message_id, d.endpoint
        FROM outbound_delivery d
        WHERE d.status = 'pending'
          AND d.next_at <= clock_timestamp()
          AND d.endpoint = ANY (ARRAY(
                  SELECT e.name FROM outbound_endpoint e
                  WHERE e.name = ANY (p_endpoints)
                    AND e.disabled_at IS NULL))
        ORDER BY d.next_at, d.message_id
        LIMIT p_limit
        FOR UPDATE OF d SKIP LOCKED
    ), claimed AS (
        UPDATE outbound_delivery d
        SET status = 'sending', attempts = d.attempts + 1,
            claimed_by = p_sender,
            lease_expires_at = clock_timestamp()
                               + p_lease_seconds * interval '1 second'
        FROM due
        WHERE d.message_id = due.message_id AND d.endpoint = due.endpoint
        RETURNING d.message_id, d.endpoint, d.attempts
    )
    SELECT c.message_id, c.endpoint, m.webhook_id, c.attempts, m.type,
           m.subject, m.seq, m.body
    FROM claimed c JOIN outbound_message m ON m.id = c.message_id
    ORDER BY m.id;
END
$$;


-- claimed and not sent (the sender was stopped): due again now, the try
-- not counted
CREATE FUNCTION mt5credit.outbound_release(p_message bigint,
    p_endpoint text, p_sender text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    UPDATE outbound_delivery
    SET status = 'pending', attempts = attempts - 1,
        next_at = clock_timestamp(), claimed_by = NULL,
        lease_expires_at = NULL
    WHERE message_id = p_message AND endpoint = p_endpoint
      AND status = 'sending' AND claimed_by = p_sender;
    RETURN FOUND;
END
$$;


-- the receiver answered 2xx; false: the lease was lost meanwhile (the
-- delivery is another sender's again: it will be sent once more)
CREATE FUNCTION mt5credit.outbound_delivered(p_message bigint,
    p_endpoint text, p_sender text, p_http_status integer)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_attempt  integer;
BEGIN
    UPDATE outbound_delivery
    SET status = 'delivered', delivered_at = clock_timestamp(),
        claimed_by = NULL, lease_expires_at = NULL,
        last_http_status = p_http_status, last_error = NULL
    WHERE message_id = p_message AND endpoint = p_endpoint
      AND status = 'sending' AND claimed_by = p_sender
    RETURNING attempts INTO v_attempt;

    IF NOT FOUND THEN
        RETURN false;
    END IF;

    INSERT INTO outbound_attempt (message_id, endpoint, attempt, sender,
                                  outcome, http_status)
    VALUES (p_message, p_endpoint, v_attempt, p_sender, 'delivered',
            p_http_status);

    UPDATE outbound_endpoint
    SET failing_since = NULL, last_success_at = clock_timestamp()
    WHERE name = p_endpoint;

    RETURN true;
END
$$;


--
-- The try failed (no answer, or not 2xx).  p_retry_seconds: when to try
-- again; NULL: the schedule is spent, the delivery is exhausted (the
-- sender alerts).  Returns 'retry', 'exhausted', or 'lost' (the lease
-- was lost meanwhile: nothing recorded).
--
CREATE FUNCTION mt5credit.outbound_failed(p_message bigint, p_endpoint text,
    p_sender text, p_http_status integer, p_error text,
    p_retry_seconds integer)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_attempt  integer;
    v_done     boolean := p_retry_seconds IS NULL;
    v_now      timestamptz := clock_timestamp();
BEGIN
    UPDATE outbound_delivery
    SET status = CASE WHEN v_done THEN 'exhausted' ELSE 'pending' END,
        exhausted_at = CASE WHEN v_done THEN v_now END,
        next_at = CASE WHEN v_done THEN next_at
                       ELSE v_now + p_retry_seconds * interval '1 second'
                  END,
        claimed_by = NULL, lease_expires_at = NULL,
        last_http_status = p_http_status, last_error = left(p_error, 500)
    WHERE message_id = p_message AND endpoint = p_endpoint
      AND status = 'sending' AND claimed_by = p_sender
    RETURNING attempts INTO v_attempt;

    IF NOT FOUND THEN
        RETURN 'lost';
    END IF;

    INSERT INTO outbound_attempt (message_id, endpoint, attempt, sender,
                                  outcome, http_status, error)
    VALUES (p_message, p_endpoint, v_attempt, p_sender,
            CASE WHEN v_done THEN 'exhausted' ELSE 'failed' END,
            p_http_status, left(p_error, 500));

    UPDATE outbound_endpoint
    SET failing_since = coalesce(failing_since, v_now)
    WHERE name = p_endpoint;

    RETURN CASE WHEN v_done THEN 'exhausted' ELSE 'retry' END;
END
$$;


-- an endpoint failing, with no success, for this long is disabled now:
-- true once, for the sender to alert
CREATE FUNCTION mt5credit.outbound_disable_failing(p_endpoint text,
    p_sender text, p_after_seconds integer)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    UPDATE outbound_endpoint
    SET disabled_at = clock_timestamp(),
        disabled_why = format('failing since %s, no delivery for %s s '
                              '(outbound_disable_after); noted by %s',
                              failing_since, p_after_seconds, p_sender)
    WHERE name = p_endpoint
      AND disabled_at IS NULL
      AND failing_since IS NOT NULL
      AND failing_since <= clock_timestamp()
                           - p_after_seconds * interval '1 second';
    RETURN FOUND;
END
$$;


-- for the metrics: each endpoint's deliveries by status, and the age of
-- its oldest one not delivered (pending or sending)
CREATE FUNCTION mt5credit.outbound_backlog()
RETURNS TABLE (endpoint text, disabled boolean, status text,
               deliveries bigint, oldest_seconds double precision)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT e.name, e.disabled_at IS NOT NULL, s.status,
           (SELECT count(*) FROM outbound_delivery d
            WHERE d.endpoint = e.name AND d.status = s.status),
           coalesce((SELECT extract(epoch FROM clock_timestamp()
                                    - min(m.created_at))
                     FROM outbound_delivery d
                     JOIN outbound_message m ON m.id = d.message_id
                     WHERE d.endpoint = e.name AND d.status = s.status), 0)
    FROM outbound_endpoint e
    CROSS JOIN (VALUES ('pending'), ('sending'), ('exhausted')) s (status)
    WHERE e.retired_at IS NULL
    ORDER BY 1, 3
$$;


-- ---------------------------------------------------------------------
-- People (mt5credit_operator; the console acts as the person)
-- ---------------------------------------------------------------------

--
-- Send one message again (to one endpoint, or to every one it has), or
-- every message since a time.  The same bytes under the same webhook-id:
-- a receiver that has it drops it.  Recorded with who and why.
--
CREATE FUNCTION mt5credit.outbound_replay(p_webhook_id text,
    p_endpoint text, p_reason text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'a replay needs a reason' USING ERRCODE = 'MC161';
    END IF;

    IF NOT EXISTS (SELECT 1 FROM outbound_message
                   WHERE webhook_id = p_webhook_id)
    THEN
        RAISE EXCEPTION 'no outbound message %', p_webhook_id
            USING ERRCODE = 'MC162';
    END IF;

    UPDATE outbound_delivery d
    SET status = 'pending', attempts = 0, next_at = clock_timestamp(),
        delivered_at = NULL, exhausted_at = NULL
    FROM outbound_message m
    WHERE m.webhook_id = p_webhook_id AND d.message_id = m.id
      AND d.endpoint = coalesce(p_endpoint, d.endpoint)
      AND d.status <> 'sending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    INSERT INTO outbound_replay (reason, webhook_id, endpoint, deliveries)
    VALUES (p_reason, p_webhook_id, p_endpoint, v_n);
    RETURN v_n;
END
$$;


--
-- Every message made since p_since, to one endpoint or all: a receiver
-- that lost its store, or an endpoint registered after them.  An
-- endpoint that never had a message gets its delivery now.
--
CREATE FUNCTION mt5credit.outbound_replay_since(p_since timestamptz,
    p_endpoint text, p_reason text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
    v_k  integer;
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'a replay needs a reason' USING ERRCODE = 'MC161';
    END IF;

    IF p_since IS NULL OR p_since > clock_timestamp() THEN
        RAISE EXCEPTION 'replay since when? a time in the past'
            USING ERRCODE = 'MC161';
    END IF;

    IF p_endpoint IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM outbound_endpoint WHERE name = p_endpoint)
    THEN
        RAISE EXCEPTION 'no outbound endpoint %', p_endpoint
            USING ERRCODE = 'MC162';
    END IF;

    UPDATE outbound_delivery d
    SET status = 'pending', attempts = 0, next_at = clock_timestamp(),
        delivered_at = NULL, exhausted_at = NULL
    FROM outbound_message m
    WHERE m.created_at >= p_since AND d.message_id = m.id
      AND d.endpoint = coalesce(p_endpoint, d.endpoint)
      AND d.status <> 'sending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    INSERT INTO outbound_delivery (message_id, endpoint)
    SELECT m.id, e.name
    FROM outbound_message m CROSS JOIN outbound_endpoint e
    WHERE m.created_at >= p_since
      AND e.name = coalesce(p_endpoint, e.name)
      AND (e.retired_at IS NULL OR e.name = p_endpoint)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_k = ROW_COUNT;

    INSERT INTO outbound_replay (reason, since, endpoint, deliveries)
    VALUES (p_reason, p_since, p_endpoint, v_n + v_k);
    RETURN v_n + v_k;
END
$$;


-- a disabled endpoint on again: its waiting deliveries go out
CREATE FUNCTION mt5credit.outbound_endpoint_enable(p_name text,
    p_reason text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'enabling an endpoint needs a reason'
            USING ERRCODE = 'MC161';
    END IF;

    UPDATE outbound_endpoint
    SET disabled_at = NULL, disabled_why = NULL, failing_since = NULL,
        retired_at = NULL
    WHERE name = p_name AND disabled_at IS NOT NULL;

    IF FOUND THEN
        INSERT INTO outbound_replay (reason, since, endpoint, deliveries)
        SELECT 'enabled: ' || p_reason, clock_timestamp(), p_name,
               count(*)::integer
        FROM outbound_delivery WHERE endpoint = p_name AND status = 'pending';
    END IF;
    RETURN FOUND;
END
$$;


--
-- An endpoint that is gone (its section taken out of every sender's
-- configuration): no new event is made for it, and it leaves the
-- backlog.  What it had not been sent stays, with its record; enabling
-- it again (outbound_endpoint_enable()) sends that, and outbound_replay_
-- since() what was made meanwhile.
--
CREATE FUNCTION mt5credit.outbound_endpoint_retire(p_name text,
    p_reason text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'retiring an endpoint needs a reason'
            USING ERRCODE = 'MC161';
    END IF;

    UPDATE outbound_endpoint
    SET retired_at = clock_timestamp(),
        disabled_at = coalesce(disabled_at, clock_timestamp()),
        disabled_why = format('retired by %s: %s', person(), p_reason)
    WHERE name = p_name AND retired_at IS NULL;

    IF NOT FOUND THEN
        RETURN false;
    END IF;

    -- on record beside the replays and enablings: who, when, why
    INSERT INTO outbound_replay (reason, since, endpoint, deliveries)
    VALUES ('retired: ' || p_reason, clock_timestamp(), p_name, 0);
    RETURN true;
END
$$;


-- the messages, newest first, with each endpoint's delivery
CREATE FUNCTION mt5credit.outbound_list(p_since timestamptz, p_status text,
    p_subject text, p_limit integer)
RETURNS TABLE (webhook_id text, type text, subject text, seq integer,
               created_at timestamptz, endpoint text, status text,
               attempts integer, last_http_status integer, last_error text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT m.webhook_id, m.type, m.subject, m.seq, m.created_at,
           d.endpoint, d.status, d.attempts, d.last_http_status, d.last_error
    FROM outbound_message m
    LEFT JOIN outbound_delivery d ON d.message_id = m.id
    WHERE m.created_at >= coalesce(p_since, '-infinity')
      AND (p_status IS NULL OR d.status = p_status)
      AND m.subject = coalesce(p_subject, m.subject)
    ORDER BY m.id DESC, d.endpoint
    LIMIT least(coalesce(p_limit, 100), 10000)
$$;


-- one message: its body as sent, each delivery and every try
CREATE FUNCTION mt5credit.outbound_show(p_webhook_id text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT jsonb_build_object(
        'webhook_id', m.webhook_id, 'type', m.type, 'subject', m.subject,
        'sequence', m.seq, 'created_at', m.created_at, 'body', m.body,
        'deliveries', (SELECT coalesce(jsonb_agg(to_jsonb(d)
                                                 ORDER BY d.endpoint), '[]')
                       FROM outbound_delivery d WHERE d.message_id = m.id),
        'attempts', (SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY a.id),
                                     '[]')
                     FROM outbound_attempt a WHERE a.message_id = m.id),
        'replays', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.id),
                                    '[]')
                    FROM outbound_replay r
                    WHERE r.webhook_id = m.webhook_id))
    FROM outbound_message m WHERE m.webhook_id = p_webhook_id
$$;


REVOKE ALL ON FUNCTION
    mt5credit.outbound_credit_data(bigint),
    mt5credit.outbound_endpoint_register(text),
    mt5credit.outbound_sweep(text),
    mt5credit.outbound_claim(text, text[], integer, integer),
    mt5credit.outbound_release(bigint, text, text),
    mt5credit.outbound_delivered(bigint, text, text, integer),
    mt5credit.outbound_failed(bigint, text, text, integer, text, integer),
    mt5credit.outbound_disable_failing(text, text, integer),
    mt5credit.outbound_backlog(),
    mt5credit.outbound_replay(text, text, text),
    mt5credit.outbound_replay_since(timestamptz, text, text),
    mt5credit.outbound_endpoint_enable(text, text),
    mt5credit.outbound_endpoint_retire(text, text),
    mt5credit.outbound_list(timestamptz, text, text, integer),
    mt5credit.outbound_show(text)
    FROM PUBLIC;

-- the sender checks it reached its deployment's database (036)
GRANT EXECUTE ON FUNCTION mt5credit.deployment_tag() TO mt5credit_outbound;

GRANT EXECUTE ON FUNCTION
    mt5credit.outbound_endpoint_register(text),
    mt5credit.outbound_sweep(text),
    mt5credit.outbound_claim(text, text[], integer, integer),
    mt5credit.outbound_release(bigint, text, text),
    mt5credit.outbound_delivered(bigint, text, text, integer),
    mt5credit.outbound_failed(bigint, text, text, integer, text, integer),
    mt5credit.outbound_disable_failing(text, text, integer),
    mt5credit.outbound_backlog()
    TO mt5credit_outbound;

GRANT EXECUTE ON FUNCTION
    mt5credit.outbound_replay(text, text, text),
    mt5credit.outbound_replay_since(timestamptz, text, text),
    mt5credit.outbound_endpoint_enable(text, text),
    mt5credit.outbound_endpoint_retire(text, text),
    mt5credit.outbound_list(timestamptz, text, text, integer),
    mt5credit.outbound_show(text),
    mt5credit.outbound_backlog()
    TO mt5credit_operator;

GRANT EXECUTE ON FUNCTION
    mt5credit.outbound_list(timestamptz, text, text, integer),
    mt5credit.outbound_show(text),
    mt5credit.outbound_backlog()
    TO mt5credit_reader;
