--
-- 031: the provider query's functions move from the worker's role to the
-- query's own (030).  The worker makes deals; it never asks the provider
-- about a payment, so it may not say what the provider answered.
--

REVOKE EXECUTE ON FUNCTION
    mt5credit.query_due(text, interval, integer),
    mt5credit.query_answered(text, bigint, text, bytea),
    mt5credit.query_record(bigint, text, interval, integer)
    FROM mt5credit_worker;

GRANT EXECUTE ON FUNCTION
    mt5credit.query_due(text, interval, integer),
    mt5credit.query_answered(text, bigint, text, bytea),
    mt5credit.query_record(bigint, text, interval, integer)
    TO mt5credit_query;
