--
-- 029: the database went back in time.
--
-- No transaction spans PostgreSQL and MT5.  If the database loses what it
-- committed (a failover under asynchronous replication, a restore from a
-- backup or a snapshot), a credit whose deal MT5 made is pending again in
-- it, and the next claim would make a second deal.  The workers notice
-- (batch/mc_rewind.c): each keeps, outside the database, its last claim
-- (credit and attempt), written before that claim's call may leave, and
-- the database's system identifier and timeline.  A database that holds
-- an older attempt of a claimed credit, or no such credit, lost a claim
-- whose call may have been made; from then on every credit that could
-- have been acted on is looked up by its reference before its next call.
--
--   db_identity(credits,  what a worker compares: system identifier,
--     attempts)           timeline, how many of the claims are not there
--                         (and the first of them)
--   database_rewound()    every pending credit becomes unknown, its
--                         attempt counted on, with a wait of a lease (a
--                         call of the lost timeline may still be running),
--                         so the resolver looks it up before anything is
--                         sent; one critical case
--

INSERT INTO mt5credit.credit_transition VALUES
    ('pending', 'unknown',
     'the database went back in time: looked up before any call');


CREATE FUNCTION mt5credit.db_identity(p_credits bigint[],
    p_attempts integer[])
RETURNS TABLE (system_identifier text, timeline integer, behind integer,
               behind_credit bigint, behind_attempts integer)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT (SELECT s.system_identifier::text FROM pg_control_system() s),
           (SELECT c.timeline_id FROM pg_control_checkpoint() c),
           (SELECT count(*)::integer
            FROM unnest(p_credits, p_attempts) f (id, attempts)
            LEFT JOIN mt5_credit c ON c.id = f.id
            WHERE c.id IS NULL OR c.attempts < f.attempts),
           b.id, b.attempts
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
        SELECT f.id, coalesce(c.attempts, 0) AS attempts
        FROM unnest(p_credits, p_attempts) f (id, attempts)
        LEFT JOIN mt5_credit c ON c.id = f.id
        WHERE c.id IS NULL OR c.attempts < f.attempts
        ORDER BY f.id LIMIT 1) b ON true
$$;


CREATE FUNCTION mt5credit.database_rewound(p_worker text,
    p_lease_seconds integer, p_detail jsonb)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || '{"step": "database_rewound"}');

    -- attempts + 1: the lost timeline may have claimed it (the attempt is
    -- the lease token, so no worker of that timeline can write it now)
    UPDATE mt5_credit
    SET status = 'unknown',
        attempts = attempts + 1,
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL
    WHERE status = 'pending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    PERFORM open_case('database_rewound', 'critical',
                      'database_rewound:' || md5(coalesce(p_detail, '{}')::text
                                                 || clock_timestamp()),
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'credits_to_look_up', v_n,
                                            'seen_at', clock_timestamp()));
    RETURN v_n;
END
$$;

GRANT EXECUTE ON FUNCTION
    mt5credit.db_identity(bigint[], integer[]),
    mt5credit.database_rewound(text, integer, jsonb)
    TO mt5credit_worker;
