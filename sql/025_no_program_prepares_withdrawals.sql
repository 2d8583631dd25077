--
-- 025: no program may take a person's part in a withdrawal.
--
-- 016 let the worker role run withdrawal_prepare() ("the automated rules,
-- as maker").  Nothing ever called it, and it made the two-person rule a
-- one-person rule for anyone holding a batch host's credentials: prepare
-- as mt5credit_worker, approve as themselves.  Preparing and approving
-- are for people (mt5credit_operator, one login role each) only.
--

REVOKE EXECUTE ON FUNCTION mt5credit.withdrawal_prepare(text, text)
    FROM mt5credit_worker;
