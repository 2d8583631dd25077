--
-- 066: a credit's reference is its payment's, the same on every timeline.
--
-- A credit's reference was its row's number (dep:<id>).  A database that
-- went back in time (an asynchronous failover, a restore) gives numbers
-- out again, and MT5, which no restore rewinds, still holds the deals made
-- under them:
--   - a number of the lost timeline given to another payment: MT5 held
--     "dep:34" for one client's payment, the new primary gave dep:34 to
--     another's (037's jump of a million helps only once a worker has
--     noticed the rewind, and the edge stores credits before that);
--   - a payment of the lost timeline delivered again (a provider's retry,
--     a backfill, a replay): a new credit, a new number, and a second deal
--     beside the lost one's (five payments, ten deals).
--
-- Now a payment's credit (deposit, refund, chargeback and its reversal)
-- takes its reference from the payment itself, the provider and its
-- payment key, which every timeline computes alike:
--
--   dep:<first 18 hex digits of sha256(provider ":" provider_payment_id)>
--
-- 72 bits: two of a hundred million payments share one with a chance of
-- one in a million, and the unique key refuses the second (the delivery
-- fails, loudly) rather than let two payments share a deal.  With the
-- deployment tag the comment is 8 + 1 + 4 + 18 = 31 characters, MT5's
-- limit.  Credits made before this keep their number for ever
-- (reference_form 1): the deals MT5 holds are under it.  Corrections and
-- withdrawal debits are not payments and keep theirs (cor:<id>, wd:<id>);
-- 037 covers them.
--
-- The same reference on every timeline means a payment the lost timeline
-- credited is found by the resolver, if it is looked up before any call,
-- over a window that reaches back into the lost timeline:
--   - database_rewind.lost_from: the last change the database held when
--     the rewind was noticed; what came after it was lost;
--   - mt5_credit.look_from: where a lookup of the credit starts (NULL: a
--     lookback before it was made, as before);
--   - database_rewound() sets look_from on the pending credits it marks;
--   - a payment's credit made within a week after a rewind (a provider
--     retries for three days; a backfill or replay comes later still, and
--     is then the desk's) starts unknown, looked up from lost_from: the
--     payment may be one the lost timeline credited.
--
-- This file holds the current definitions of the reference column,
-- work_item_of() (061's) and the work_item type's look_from;
-- database_rewound() (037's) is re-declared here and again by 069.
--

-- --- the reference ------------------------------------------------------------

-- the 18 hex digits of a payment's reference: immutable as a generated
-- column needs (the database's encoding never changes under it)
CREATE FUNCTION mt5credit.payment_reference_key(p_provider text,
    p_payment text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT substr(encode(sha256(convert_to(p_provider || ':' || p_payment,
                                           'UTF8')), 'hex'), 1, 18)
$$;

COMMENT ON FUNCTION mt5credit.payment_reference_key(text, text) IS
    'The part of a payment''s credit reference after "dep:" (066)';

-- existing credits keep their numbered reference: MT5's deals carry it
ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN reference_form smallint NOT NULL DEFAULT 1
        CHECK (reference_form IN (1, 2));
ALTER TABLE mt5credit.mt5_credit ALTER COLUMN reference_form SET DEFAULT 2;

COMMENT ON COLUMN mt5credit.mt5_credit.reference_form IS
    '1: numbered (dep:<id>), credits made before 066; 2: a payment''s '
    'credit named by its payment (066)';

-- PostgreSQL 15 cannot change a generated expression in place: the column
-- is made again, and its unique key with it
ALTER TABLE mt5credit.mt5_credit DROP COLUMN reference;
ALTER TABLE mt5credit.mt5_credit ADD COLUMN reference text NOT NULL
    GENERATED ALWAYS AS (CASE
        WHEN kind = 'withdrawal' THEN 'wd:' || withdrawal_id::text
        WHEN kind = 'correction' THEN 'cor:' || id::text
        WHEN reference_form = 1 THEN
            CASE WHEN kind = 'deposit' THEN 'dep:'
                 WHEN kind = 'refund' THEN 'rfd:'
                 WHEN direction = 'debit' THEN 'cbk:'
                 ELSE 'cbr:' END || id::text
        ELSE
            CASE WHEN kind = 'deposit' THEN 'dep:'
                 WHEN kind = 'refund' THEN 'rfd:'
                 WHEN direction = 'debit' THEN 'cbk:'
                 ELSE 'cbr:' END
            || mt5credit.payment_reference_key(provider, provider_payment_id)
    END) STORED;
ALTER TABLE mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_reference_key UNIQUE (reference);
COMMENT ON COLUMN mt5credit.mt5_credit.reference IS
    'The compact reference in the MT5 deal''s comment: a payment''s credit '
    'is named by its payment (dep:<18 hex digits>, 066), the same on every '
    'timeline; corrections and withdrawal debits by their number.';


-- --- where a lookup starts ------------------------------------------------------

ALTER TABLE mt5credit.database_rewind ADD COLUMN lost_from timestamptz;
COMMENT ON COLUMN mt5credit.database_rewind.lost_from IS
    'The last change the database held when the rewind was noticed: the '
    'lost timeline came after it (066)';

ALTER TABLE mt5credit.mt5_credit ADD COLUMN look_from timestamptz;
COMMENT ON COLUMN mt5credit.mt5_credit.look_from IS
    'Where a lookup of its deal starts when that is before it was made: '
    'the lost timeline of a rewind (066); NULL: a lookback before created_at';

ALTER TYPE mt5credit.work_item ADD ATTRIBUTE look_from timestamptz;


CREATE OR REPLACE FUNCTION mt5credit.database_rewound(p_worker text,
    p_lease_seconds integer, p_detail jsonb)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n          integer;
    v_credit     bigint;
    v_wd         bigint;
    v_lost_from  timestamptz;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || '{"step": "database_rewound"}');

    -- 066: what the database still held ends here; its credits' history
    -- is every change to them
    v_lost_from := coalesce((SELECT h.at FROM credit_history h
                             ORDER BY h.id DESC LIMIT 1),
                            clock_timestamp());

    -- attempts + 1: the lost timeline may have claimed it (the attempt is
    -- the lease token, so no worker of that timeline can write it now);
    -- 066: looked up from the lost timeline's start
    UPDATE mt5_credit
    SET status = 'unknown',
        attempts = attempts + 1,
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL,
        look_from = least(coalesce(look_from, v_lost_from), v_lost_from)
    WHERE status = 'pending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    -- 037: which withdrawals the lost timeline may have debited
    INSERT INTO database_rewind (noticed_by, withdrawals_upto, detail,
                                 lost_from)
    VALUES (p_worker, coalesce((SELECT max(id) FROM withdrawal), 0),
            coalesce(p_detail, '{}'), v_lost_from);

    -- 037: numbers the lost timeline gave out are never given again
    -- (corrections and withdrawals are still numbered)
    v_credit := setval(pg_get_serial_sequence('mt5credit.mt5_credit', 'id'),
                       greatest((SELECT max(id) FROM mt5_credit), 0)
                       + 1000000);
    v_wd := setval(pg_get_serial_sequence('mt5credit.withdrawal', 'id'),
                   greatest((SELECT max(id) FROM withdrawal), 0) + 1000000);

    PERFORM open_case('database_rewound', 'critical',
                      'database_rewound:' || md5(coalesce(p_detail, '{}')::text
                                                 || clock_timestamp()),
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'credits_to_look_up', v_n,
                                            'lost_from', v_lost_from,
                                            'next_credit_from', v_credit + 1,
                                            'next_withdrawal_from', v_wd + 1,
                                            'seen_at', clock_timestamp()));
    RETURN v_n;
END
$$;


-- a payment's credit made within a week after a rewind: its payment may
-- be one the lost timeline credited (delivered again), so it is looked up
-- from the lost timeline's start before any call
CREATE FUNCTION mt5credit.payment_credit_after_rewind()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_from    timestamptz;
    v_detail  text;
BEGIN
    SELECT min(r.lost_from) INTO v_from
    FROM database_rewind r
    WHERE r.at > clock_timestamp() - interval '7 days';

    IF v_from IS NULL THEN
        RETURN NULL;
    END IF;

    -- the inserter's transaction: its detail is put back afterwards
    v_detail := current_setting('mt5credit.detail', true);
    PERFORM set_config('mt5credit.detail',
        (coalesce(nullif(v_detail, ''), '{}')::jsonb
         || jsonb_build_object('step', 'a payment''s credit within a week '
                               'of a rewind: looked up first',
                               'look_from', v_from))::text, true);
    UPDATE mt5_credit
    SET status = 'unknown', attempts = attempts + 1,
        lease_expires_at = clock_timestamp(), next_check_at = NULL,
        look_from = v_from
    WHERE id = NEW.id AND status = 'pending';
    PERFORM set_config('mt5credit.detail', coalesce(v_detail, ''), true);

    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_payment_after_rewind
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.kind NOT IN ('withdrawal', 'correction'))
    EXECUTE FUNCTION mt5credit.payment_credit_after_rewind();


-- --- 061's work_item_of(), with where a lookup starts ------------------------------

CREATE OR REPLACE FUNCTION mt5credit.work_item_of(p_id bigint)
RETURNS mt5credit.work_item
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  work_item;
BEGIN
    SELECT c.id, c.attempts, c.kind, c.direction,
           mt5_comment(c.deployment_tag, c.reference), c.mt5_server,
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
            * 1000)::bigint,
           CASE WHEN c.status = 'unknown'
                THEN (settle_request(c.id)).deal_ticket END,
           -- 066
           c.look_from
    INTO r
    FROM mt5_credit c
    CROSS JOIN LATERAL (
        SELECT d.client_id FROM deposit d WHERE d.id = c.deposit_id
        UNION ALL
        SELECT w.client_id FROM withdrawal w WHERE w.id = c.withdrawal_id
    ) o
    JOIN currency cur ON cur.code = c.currency
    WHERE c.id = p_id;

    -- as the SQL function did: no such credit is NULL, not a row of NULLs
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;

    RETURN r;
END
$$;
