--
-- 017: the MT5 debit of an approved withdrawal.
--
-- Money leaves the MT5 account before it leaves the company: approving a
-- withdrawal (016) creates, in the same transaction, one debit of kind
-- 'withdrawal' in mt5_credit, with the reference "wd:<withdrawal id>".
-- The worker makes it like any other balance deal (claim, call, resolve:
-- 004, 008), with the same unknown handling; the payout to the provider
-- (018) waits until this debit is done.
--
-- An mt5_credit row now belongs to exactly one deposit or one withdrawal.
-- What a withdrawal debit is cannot differ from the approved request: the
-- foreign keys below tie its login, currency and amount to the withdrawal
-- row, and its existence to that row being approved (a final status).
--

-- targets of the debit's composite foreign keys
ALTER TABLE mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_debit_account
        UNIQUE (id, mt5_server, mt5_login, currency),
    ADD CONSTRAINT withdrawal_debit_terms UNIQUE (id, amount_minor, status);

ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN withdrawal_id bigint,
    -- set for kind 'withdrawal' only: what the approved request says
    ADD COLUMN withdrawal_amount_minor bigint
        GENERATED ALWAYS AS (CASE WHEN kind = 'withdrawal'
                                  THEN amount_minor END) STORED,
    ADD COLUMN withdrawal_status text
        GENERATED ALWAYS AS (CASE WHEN kind = 'withdrawal'
                                  THEN 'approved' END) STORED,
    ALTER COLUMN deposit_id DROP NOT NULL,

    DROP CONSTRAINT mt5_credit_kind_check,
    ADD CONSTRAINT mt5_credit_kind_check
        CHECK (kind IN ('deposit', 'refund', 'chargeback', 'correction',
                        'withdrawal')),

    -- (004's "a reversal points at its original", for two originals now)
    DROP CONSTRAINT mt5_credit_check,
    ADD CONSTRAINT mt5_credit_original_iff_reversal
        CHECK ((kind IN ('deposit', 'withdrawal'))
               = (original_credit_id IS NULL)),

    ADD CONSTRAINT mt5_credit_one_parent
        CHECK ((deposit_id IS NULL) <> (withdrawal_id IS NULL)),
    ADD CONSTRAINT mt5_credit_withdrawal_parent
        CHECK ((kind = 'withdrawal' AND direction = 'debit'
                AND withdrawal_id IS NOT NULL)
               OR (kind <> 'withdrawal'
                   AND (withdrawal_id IS NULL OR kind = 'correction'))),

    -- the debit is of the approved request's login, currency and amount
    ADD CONSTRAINT mt5_credit_withdrawal_account_fkey
        FOREIGN KEY (withdrawal_id, mt5_server, mt5_login, currency)
        REFERENCES mt5credit.withdrawal (id, mt5_server, mt5_login, currency),
    ADD CONSTRAINT mt5_credit_withdrawal_terms_fkey
        FOREIGN KEY (withdrawal_id, withdrawal_amount_minor,
                     withdrawal_status)
        REFERENCES mt5credit.withdrawal (id, amount_minor, status),

    -- a correction of a withdrawal debit stays with that withdrawal
    ADD CONSTRAINT mt5_credit_id_withdrawal_key UNIQUE (id, withdrawal_id),
    ADD CONSTRAINT mt5_credit_original_withdrawal_fkey
        FOREIGN KEY (original_credit_id, withdrawal_id)
        REFERENCES mt5credit.mt5_credit (id, withdrawal_id);

-- one debit per withdrawal, however often approval is attempted
CREATE UNIQUE INDEX mt5_credit_one_per_withdrawal
    ON mt5credit.mt5_credit (withdrawal_id) WHERE kind = 'withdrawal';

-- the reference gains "wd:<withdrawal id>": what the client and the desk
-- know the withdrawal by (PostgreSQL 15 cannot change a generated
-- expression in place; the table is rewritten once, here)
ALTER TABLE mt5credit.mt5_credit DROP COLUMN reference;
ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN reference text NOT NULL UNIQUE
        GENERATED ALWAYS AS (
            CASE
            WHEN kind = 'withdrawal' THEN 'wd:' || withdrawal_id
            WHEN kind = 'deposit' THEN 'dep:' || id
            WHEN kind = 'refund' THEN 'rfd:' || id
            WHEN kind = 'correction' THEN 'cor:' || id
            WHEN direction = 'debit' THEN 'cbk:' || id
            ELSE 'cbr:' || id
            END) STORED;


--
-- A correction is made by the case desk (010) from its original credit
-- and names the original's deposit; an original that is a withdrawal
-- debit has none, and the correction belongs to its withdrawal instead.
-- The foreign key mt5_credit_original_withdrawal_fkey checks the result.
--
CREATE FUNCTION mt5credit.credit_inherit_withdrawal()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF NEW.kind = 'correction' AND NEW.deposit_id IS NULL
       AND NEW.withdrawal_id IS NULL
    THEN
        SELECT withdrawal_id INTO NEW.withdrawal_id
        FROM mt5_credit WHERE id = NEW.original_credit_id;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER mt5_credit_inherit_withdrawal
    BEFORE INSERT ON mt5credit.mt5_credit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_inherit_withdrawal();


--
-- Approval is what creates the debit: the row that says "approved" and
-- the debit it allows are written in one transaction, or neither.
--
CREATE FUNCTION mt5credit.withdrawal_enqueue_debit()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_config('mt5credit.actor', NEW.approved_by, true);
    PERFORM set_config('mt5credit.detail',
        jsonb_build_object('withdrawal', NEW.reference,
                           'prepared_by', NEW.prepared_by,
                           'approved_by', NEW.approved_by,
                           'digest', NEW.approved_digest)::text, true);

    INSERT INTO mt5_credit (kind, direction, withdrawal_id, provider,
                            provider_payment_id, mt5_server, mt5_login,
                            amount_minor, currency, paid_amount_minor,
                            paid_currency)
    VALUES ('withdrawal', 'debit', NEW.id, NEW.provider,
            'payout:' || NEW.reference, NEW.mt5_server, NEW.mt5_login,
            NEW.amount_minor, NEW.currency, NEW.amount_minor, NEW.currency);
    RETURN NULL;
END
$$;

CREATE TRIGGER withdrawal_enqueue_debit
    AFTER UPDATE OF status ON mt5credit.withdrawal
    FOR EACH ROW
    WHEN (NEW.status = 'approved' AND OLD.status <> 'approved')
    EXECUTE FUNCTION mt5credit.withdrawal_enqueue_debit();


--
-- 008's work item, for a credit of either parent: the client is the
-- deposit's or the withdrawal's, and ownership is checked against it.
--
CREATE OR REPLACE FUNCTION mt5credit.work_item_of(p_id bigint)
RETURNS mt5credit.work_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.attempts, c.kind, c.direction, c.reference, c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, cur.minor_digits,
           o.client_id,
           EXISTS (SELECT 1 FROM client_account a
                   WHERE a.mt5_server = c.mt5_server
                     AND a.mt5_login = c.mt5_login
                     AND a.client_id = o.client_id
                     AND a.currency = c.currency
                     AND a.status = 'active'),
           c.created_at, c.claimed_at, c.lease_expires_at,
           (extract(epoch FROM c.lease_expires_at - clock_timestamp())
            * 1000)::bigint
    FROM mt5_credit c
    CROSS JOIN LATERAL (
        SELECT d.client_id FROM deposit d WHERE d.id = c.deposit_id
        UNION ALL
        SELECT w.client_id FROM withdrawal w WHERE w.id = c.withdrawal_id
    ) o
    JOIN currency cur ON cur.code = c.currency
    WHERE c.id = p_id
$$;


-- 004's immutability, for the new column: whose debit it is never changes
CREATE FUNCTION mt5credit.credit_withdrawal_fixed()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF NEW.withdrawal_id IS DISTINCT FROM OLD.withdrawal_id THEN
        RAISE EXCEPTION 'credit % is immutable except for its state', OLD.id
            USING ERRCODE = 'MC011';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER mt5_credit_withdrawal_fixed
    BEFORE UPDATE OF withdrawal_id ON mt5credit.mt5_credit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_withdrawal_fixed();
