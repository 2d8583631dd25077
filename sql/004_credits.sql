--
-- 004: credit intents and their history.
--
-- An mt5_credit row says: this provider payment (or refund, or chargeback)
-- must become exactly one balance deal of this amount on this MT5 login.
-- No transaction spans this database and MT5, so the row carries the state
-- of the attempt:
--
--   pending --claim--> claimed --deal ticket--> done
--                         |  \--explicit rejection--> failed   (a person)
--                         \--timeout, crash, expired lease--> unknown
--   unknown --deal found--> done
--   unknown --complete answer, no deal--> pending
--   unknown --rejected by a person--> failed
--   failed  --re-queued by two people (case desk)--> pending
--
-- A trigger refuses every other transition and appends each change to
-- credit_history; writers still use conditional UPDATEs and read the row
-- count, the trigger is the last line, not the first.

CREATE TABLE mt5credit.mt5_credit (
    id                   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                 text        NOT NULL
                         CHECK (kind IN ('deposit', 'refund', 'chargeback')),
    direction            text        NOT NULL
                         CHECK (direction IN ('credit', 'debit')),
    -- refunds and chargebacks point at the deposit credit they undo
    original_credit_id   bigint,
    deposit_id           bigint      NOT NULL,

    -- the provider's key for this movement of money: at most one credit
    provider             text        NOT NULL
                         CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    provider_payment_id  text        NOT NULL
                         CHECK (length(provider_payment_id) BETWEEN 1 AND 255),

    -- where and how much, copied from the deposit and checked by the
    -- composite foreign key below, so it cannot differ from it
    mt5_server           text        NOT NULL,
    mt5_login            bigint      NOT NULL CHECK (mt5_login > 0),
    amount_minor         bigint      NOT NULL CHECK (amount_minor > 0),
    currency             text        NOT NULL
                         REFERENCES mt5credit.currency (code),

    -- what the provider moved, and the conversion used (never recomputed)
    paid_amount_minor    bigint      NOT NULL CHECK (paid_amount_minor > 0),
    paid_currency        text        NOT NULL
                         REFERENCES mt5credit.currency (code),
    fx_rate              numeric     CHECK (fx_rate > 0),
    fx_source            text,
    fx_at                timestamptz,

    -- our reference in the MT5 deal comment: compact (MT5 keeps 31
    -- characters), the same on every attempt, derived so it cannot drift
    reference            text        NOT NULL UNIQUE
                         GENERATED ALWAYS AS (
                             CASE
                             WHEN kind = 'deposit' THEN 'dep:'
                             WHEN kind = 'refund' THEN 'rfd:'
                             WHEN direction = 'debit' THEN 'cbk:'
                             ELSE 'cbr:'
                             END || id) STORED,

    status               text        NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'claimed', 'unknown',
                                           'done', 'failed')),
    mt5_deal_ticket      bigint      CHECK (mt5_deal_ticket > 0),
    attempts             integer     NOT NULL DEFAULT 0
                         CHECK (attempts >= 0),
    claimed_at           timestamptz,
    claimed_by           text,
    lease_expires_at     timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),

    UNIQUE (provider, provider_payment_id),
    -- one deal is one credit; each MT5 server numbers its own deals
    UNIQUE (mt5_server, mt5_deal_ticket),
    -- target for refunds' link: an original of the same deposit
    UNIQUE (id, deposit_id),

    FOREIGN KEY (deposit_id, mt5_server, mt5_login, currency)
        REFERENCES mt5credit.deposit
            (id, mt5_server, mt5_login, account_currency),
    FOREIGN KEY (original_credit_id, deposit_id)
        REFERENCES mt5credit.mt5_credit (id, deposit_id),

    CHECK ((kind = 'deposit') = (original_credit_id IS NULL)),
    CHECK (kind <> 'deposit' OR direction = 'credit'),
    CHECK (kind <> 'refund' OR direction = 'debit'),
    CHECK ((paid_currency = currency) = (fx_rate IS NULL)),
    CHECK ((fx_rate IS NULL) = (fx_source IS NULL)),
    CHECK ((fx_rate IS NULL) = (fx_at IS NULL)),
    CHECK (paid_currency <> currency OR paid_amount_minor = amount_minor),
    -- a deal ticket exactly when done
    CHECK ((status = 'done') = (mt5_deal_ticket IS NOT NULL)),
    -- a claim always has its lease
    CHECK (status <> 'claimed'
           OR (claimed_at IS NOT NULL AND lease_expires_at IS NOT NULL
               AND claimed_by IS NOT NULL)),
    -- nothing leaves pending without an attempt being counted
    CHECK (status = 'pending' OR attempts > 0)
);

COMMENT ON TABLE mt5credit.mt5_credit IS
    'One intended MT5 balance deal per provider payment, refund or '
    'chargeback, with the state of the attempt to make it.';
COMMENT ON COLUMN mt5credit.mt5_credit.amount_minor IS
    'Minor units of currency (the MT5 account''s currency); the sign of '
    'the balance operation comes from direction.';

-- one deposit is credited by at most one payment: a second payment for
-- the same deposit is a case for a person, not a second credit
CREATE UNIQUE INDEX mt5_credit_one_per_deposit
    ON mt5credit.mt5_credit (deposit_id) WHERE kind = 'deposit';

-- the worker's queue and the sweeper's scan
CREATE INDEX mt5_credit_open_idx
    ON mt5credit.mt5_credit (status, id)
    WHERE status IN ('pending', 'claimed', 'unknown');

CREATE INDEX mt5_credit_original_idx
    ON mt5credit.mt5_credit (original_credit_id)
    WHERE original_credit_id IS NOT NULL;


CREATE TABLE mt5credit.credit_history (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    credit_id    bigint      NOT NULL REFERENCES mt5credit.mt5_credit (id),
    from_status  text,       -- NULL: the row was created
    to_status    text        NOT NULL,
    attempts     integer     NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text        NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    detail       jsonb       NOT NULL DEFAULT '{}'
                 CHECK (jsonb_typeof(detail) = 'object'),

    CHECK (from_status IS DISTINCT FROM to_status)
);

COMMENT ON TABLE mt5credit.credit_history IS
    'Append-only: one row per status change of a credit, written by a '
    'trigger. Who acted comes from the setting mt5credit.actor, details '
    'from mt5credit.detail (both transaction-local, set by the writer).';

CREATE INDEX credit_history_credit_idx
    ON mt5credit.credit_history (credit_id, id);


--
-- The legal transitions, as data the trigger reads.
--
CREATE TABLE mt5credit.credit_transition (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    why          text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO mt5credit.credit_transition VALUES
    ('pending', 'claimed', 'a worker claimed it'),
    ('claimed', 'done',    'MT5 returned a deal ticket'),
    ('claimed', 'failed',  'MT5 or a pre-check rejected it explicitly'),
    ('claimed', 'unknown', 'timeout, disconnect, crash or expired lease'),
    ('unknown', 'done',    'the deal was found by its reference'),
    ('unknown', 'pending', 'MT5 answered in full and no deal exists'),
    ('unknown', 'failed',  'a person decided it must not be made'),
    ('failed',  'pending', 'two people re-queued it');


CREATE FUNCTION mt5credit.credit_actor()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(nullif(current_setting('mt5credit.actor', true), ''),
                    session_user::text)
$$;


CREATE FUNCTION mt5credit.credit_detail()
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(nullif(current_setting('mt5credit.detail', true), ''),
                    '{}')::jsonb
$$;


CREATE FUNCTION mt5credit.credit_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' OR NEW.attempts <> 0
           OR NEW.mt5_deal_ticket IS NOT NULL
        THEN
            RAISE EXCEPTION 'credit must be created pending, unattempted'
                USING ERRCODE = 'MC010';
        END IF;

        INSERT INTO credit_history (credit_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
        RETURN NEW;
    END IF;

    -- what a credit is about never changes after creation
    IF (NEW.kind, NEW.direction, NEW.original_credit_id, NEW.deposit_id,
        NEW.provider, NEW.provider_payment_id, NEW.mt5_server, NEW.mt5_login,
        NEW.amount_minor, NEW.currency, NEW.paid_amount_minor,
        NEW.paid_currency, NEW.fx_rate, NEW.fx_source, NEW.fx_at)
       IS DISTINCT FROM
       (OLD.kind, OLD.direction, OLD.original_credit_id, OLD.deposit_id,
        OLD.provider, OLD.provider_payment_id, OLD.mt5_server, OLD.mt5_login,
        OLD.amount_minor, OLD.currency, OLD.paid_amount_minor,
        OLD.paid_currency, OLD.fx_rate, OLD.fx_source, OLD.fx_at)
    THEN
        RAISE EXCEPTION 'credit % is immutable except for its state', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    -- a recorded deal ticket is evidence; it is never replaced
    IF OLD.mt5_deal_ticket IS NOT NULL
       AND NEW.mt5_deal_ticket IS DISTINCT FROM OLD.mt5_deal_ticket
    THEN
        RAISE EXCEPTION 'credit % already has deal ticket %',
                        OLD.id, OLD.mt5_deal_ticket
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.attempts < OLD.attempts THEN
        RAISE EXCEPTION 'credit % attempts cannot go down', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM credit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'credit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC012';
        END IF;

        INSERT INTO credit_history (credit_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE TRIGGER mt5_credit_guard_and_log
    BEFORE UPDATE ON mt5credit.mt5_credit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_guard_and_log();

-- AFTER INSERT: the history row references the credit's id
CREATE TRIGGER mt5_credit_log_insert
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_guard_and_log();


--
-- Append-only tables refuse UPDATE, DELETE and TRUNCATE from everyone,
-- the owner included.
--
CREATE FUNCTION mt5credit.refuse_change()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'MC013';
END
$$;

CREATE TRIGGER credit_history_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.credit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER credit_history_no_truncate
    BEFORE TRUNCATE ON mt5credit.credit_history
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER mt5_credit_no_delete
    BEFORE DELETE ON mt5credit.mt5_credit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER mt5_credit_no_truncate
    BEFORE TRUNCATE ON mt5credit.mt5_credit
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();
