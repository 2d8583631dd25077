--
-- 085: the withdrawals waiting for their trading to be read take turns.
--
-- withdrawal_trading_due() (080) handed the worker the 20 oldest waiting
-- withdrawals each round.  One that can never be read (its deposit's
-- deal is gone from MT5, or on another login: each alerts) stayed among
-- the oldest, and 20 such kept every later withdrawal from being read,
-- and so from being prepared, for ever.  Now each withdrawal handed out is
-- noted in withdrawal_trading_try, and a round takes those never tried
-- first, then those tried longest ago: every waiting withdrawal is read
-- within (waiting / 20) rounds, whatever the others do.
--
-- The tries are a table of their own, not a column of withdrawal: a
-- withdrawal's every change is a state in the money journal (081), and a
-- round is not one.
--
-- Re-declared, this file holds its current definition:
--   withdrawal_trading_due()   (080's)
--

CREATE TABLE mt5credit.withdrawal_trading_try (
    withdrawal_id  bigint PRIMARY KEY
                   REFERENCES mt5credit.withdrawal (id) ON DELETE CASCADE,
    tries          integer NOT NULL CHECK (tries > 0),
    last_at        timestamptz NOT NULL
);

COMMENT ON TABLE mt5credit.withdrawal_trading_try IS
    'How often, and when last, the worker was handed a withdrawal to read '
    'its trading (085): the least recently tried go first.';

CREATE INDEX withdrawal_trading_try_last_idx
    ON mt5credit.withdrawal_trading_try (last_at);

-- 080's, the least recently tried first, and each handed out noted
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_trading_due(p_servers text[],
    p_limit integer)
RETURNS TABLE (id bigint, reference text, mt5_server text,
               mt5_login bigint, after_credit bigint, after_ticket bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    WITH due AS MATERIALIZED (
        SELECT w.id, w.reference, w.mt5_server, w.mt5_login,
               c.id AS after_credit, c.mt5_deal_ticket AS after_ticket,
               t.last_at
        FROM withdrawal w
        JOIN mt5_credit c ON c.id = w.trading_after
        LEFT JOIN withdrawal_trading_try t ON t.withdrawal_id = w.id
        WHERE w.trading_after IS NOT NULL AND w.trading IS NULL
          AND w.status IN ('requested', 'held')
          AND w.mt5_server = ANY (p_servers)
        ORDER BY t.last_at NULLS FIRST, w.id
        LIMIT least(greatest(coalesce(p_limit, 20), 1), 100)),
    tried AS (
        INSERT INTO withdrawal_trading_try AS t (withdrawal_id, tries,
                                                 last_at)
        SELECT d.id, 1, clock_timestamp() FROM due d
        ON CONFLICT (withdrawal_id)
            DO UPDATE SET tries = t.tries + 1, last_at = excluded.last_at)
    SELECT d.id, d.reference, d.mt5_server, d.mt5_login, d.after_credit,
           d.after_ticket
    FROM due d
    ORDER BY d.last_at NULLS FIRST, d.id
$$;
