--
-- 068: MT5 is the witness every host shares.
--
-- 029's kept claim is a file on the worker's own host.  With workers on
-- several hosts, a database that went back in time is seen only by the
-- host whose claim it lost: another host that reconnects first finds
-- all of its own claims there, claims the lost credits again (pending
-- once more) and makes each deal a second time (three payments, six
-- deals, no case), and the re-claim's attempt hides the loss from the
-- first host too.  A worker with a fresh state_dir (a container) is the
-- one-host form of it.
--
-- MT5 keeps every deal whatever the database forgets.  Before it claims
-- anything on a new connection, and every witness_interval after, a
-- worker asks MT5 for the deals of the credits next in line to be
-- claimed (batch/credit/mc_witness.c):
--
--   witness_pick(servers,    the pending credits of these servers (not
--     limit)                 paused) in claim order: where
--                            each is booked, its comment, where its
--                            lookup starts, and the database's clock
--   witness_still_pending(   those of them still pending at the attempt
--     ids, attempts)         they were read with, asked after MT5
--                            answered
--
-- A balance deal under the comment of a credit that is still pending at
-- the attempt it was read with was made under a claim the database no
-- longer has: no claim can send before its COMMIT returned (t/77), and a
-- claim made meanwhile moves the attempt on.  The database went back:
-- 066's database_rewound() makes every pending credit unknown, looked up
-- before any call, with a critical case.
--

CREATE FUNCTION mt5credit.witness_pick(p_servers text[], p_limit integer)
RETURNS TABLE (id bigint, attempts integer, mt5_server text,
               mt5_login bigint, comment text, look_from bigint,
               db_now bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.attempts, c.mt5_server, c.mt5_login,
           mt5_comment(c.deployment_tag, c.reference),
           extract(epoch FROM least(c.created_at,
                                    coalesce(c.look_from, c.created_at)))
               ::bigint,
           extract(epoch FROM now())::bigint
    FROM mt5_credit c
    WHERE c.status = 'pending'
      AND c.mt5_server = ANY (p_servers)
      AND NOT paused('server', c.mt5_server)
    ORDER BY c.id
    LIMIT greatest(p_limit, 0)
$$;

COMMENT ON FUNCTION mt5credit.witness_pick(text[], integer) IS
    'The pending credits next in line, for the worker to ask MT5 about '
    'before it claims (068)';


CREATE FUNCTION mt5credit.witness_still_pending(p_ids bigint[],
    p_attempts integer[])
RETURNS SETOF bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id
    FROM unnest(p_ids, p_attempts) f (id, attempts)
    JOIN mt5_credit c ON c.id = f.id
    WHERE c.status = 'pending' AND c.attempts = f.attempts
    ORDER BY c.id
$$;

COMMENT ON FUNCTION mt5credit.witness_still_pending(bigint[], integer[]) IS
    'Which of these credits are still pending at these attempts: one with '
    'a deal in MT5 was claimed in a timeline the database lost (068)';

GRANT EXECUTE ON FUNCTION
    mt5credit.witness_pick(text[], integer),
    mt5credit.witness_still_pending(bigint[], integer[])
    TO mt5credit_worker;
