#!/usr/bin/perl
#
# The worker's queue in the database (sql/061).  Impossible:
#   - a claim that walks over every credit already done: statistics taken
#     while a burst of credits was pending made the planner read the
#     queue through the primary key, filtering out what was done, so each
#     claim cost more than the last.  The pick reads the index of pending
#     credits alone, whatever the statistics say
#   - the oldest pending credit passed over: claims come in id order
#   - the worker's per-credit functions parsed and planned at every call
#     (SQL functions PostgreSQL cannot inline): they are PL/pgSQL, and a
#     missing credit's work item is still NULL, not a row of NULLs

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->register_account('alice', 7001, 'USD');

# 400 pending credits, analysed while all of them are pending: the
# statistics of a burst
$sb->psql(<<'SQL');
WITH d AS (
    INSERT INTO mt5credit.deposit (client_id, idempotency_key, provider,
        mt5_server, mt5_login, amount_minor, currency, account_currency,
        credit_amount_minor)
    SELECT 'alice', 'queue-key-' || g, 'stripe', 'live1', 7001, 100, 'USD',
           'USD', 100
    FROM generate_series(1, 400) g
    RETURNING id
)
INSERT INTO mt5credit.mt5_credit (kind, direction, deposit_id, provider,
    provider_payment_id, mt5_server, mt5_login, amount_minor, currency,
    paid_amount_minor, paid_currency)
SELECT 'deposit', 'credit', d.id, 'stripe', 'pi_queue_' || d.id, 'live1',
       7001, 100, 'USD', 100, 'USD'
FROM d;
ANALYZE mt5credit.mt5_credit;
SQL

# as the worker does it: claim, then record the deal, each committed
sub claims {
    my ($n) = @_;
    my $script = '';
    for my $i (1 .. $n) {
        $script .= "SELECT id, attempts FROM mt5credit.claim_credit("
                 . "'queue-test', 60, '{live1}') \\gset\n"
                 . "SELECT :id;\n"
                 . "SELECT mt5credit.credit_succeeded(:id, :attempts, "
                 . "800000 + :id, 'queue-test', '{}');\n";
    }
    $script .= "SELECT pg_stat_force_next_flush();\n";
    my $rows = $sb->psql($script, user => 'worker');
    # every other row is the claimed id, then credit_succeeded's answer
    return [ map { $rows->[2 * $_][0] } 0 .. $n - 1 ];
}

sub pending_idx_scans {
    # a session of its own: no statistics snapshot carried over
    return $sb->sql1("SELECT idx_scan FROM pg_stat_user_indexes "
                     . "WHERE indexrelname = 'mt5_credit_pending_idx'");
}

my $lowest = $sb->sql1("SELECT min(id) FROM mt5credit.mt5_credit "
                       . "WHERE status = 'pending'");
my $made = claims(300);
is_deeply($made, [ $lowest .. $lowest + 299 ],
          '300 claims, the oldest pending credit first each time');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
             . "WHERE status = 'done'"), 300, '... all 300 recorded done');

# now most of the queue is done, and the statistics still say pending
my $before = pending_idx_scans() // 0;
$made = claims(50);
is_deeply($made, [ $lowest + 300 .. $lowest + 349 ],
          'under those statistics, claims still come in id order');
my $scans = (pending_idx_scans() // 0) - $before;
cmp_ok($scans, '>=', 50,
       "... and each pick read the index of pending credits ($scans scans)");

is($sb->sql1(<<'SQL'), 'pending 50, claimed 0, unknown 0',
SELECT string_agg(status || ' ' || n, ', ' ORDER BY k)
FROM (SELECT s AS status, k,
             (SELECT count(*) FROM mt5credit.mt5_credit c
              WHERE c.status = s) AS n
      FROM unnest(ARRAY['pending', 'claimed', 'unknown'])
           WITH ORDINALITY AS u(s, k)) x
SQL
   'the other 50 are still pending');
like($sb->psql("SELECT indexdef FROM pg_indexes WHERE indexname IN "
               . "('mt5_credit_pending_idx', 'mt5_credit_open_idx') "
               . "ORDER BY indexname", raw => 1),
     qr/\(status, id\) WHERE \(status = ANY \(ARRAY\['claimed'::text, 'unknown'::text\]\)\)\n.*\(id\) WHERE \(status = 'pending'::text\)/,
     'pending credits in one index, claimed and unknown in the other');

# --- planned once -----------------------------------------------------------------

my $sql_fns = $sb->psql(<<'SQL', raw => 1);
SELECT p.proname || ' ' || l.lanname
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
WHERE n.nspname = 'mt5credit'
  AND p.proname IN ('work_item_of', 'set_actor', 'paused',
                    'credit_latency_le', 'credit_latency_ms')
ORDER BY 1
SQL
is($sql_fns, "credit_latency_le plpgsql\ncredit_latency_ms plpgsql\n"
             . "paused plpgsql\nset_actor plpgsql\nwork_item_of plpgsql\n",
   "the worker's per-credit helpers are PL/pgSQL, their plans kept");

is($sb->sql1("SELECT row_to_json(mt5credit.work_item_of(-1)) IS NULL"), 't',
   'the work item of no credit is NULL, as before');
like($sb->sql1("SELECT row_to_json(mt5credit.work_item_of($lowest))"),
     qr/"id":$lowest,.*"reference":"dep:[0-9a-f]{18}".*"owner_ok":true/,
     '... and of a credit, its fields');
is($sb->sql1("SELECT mt5credit.credit_latency_le(250) || ' ' "
             . "|| mt5credit.credit_latency_le(250001) || ' ' "
             . "|| mt5credit.credit_latency_le(NULL) || ' ' "
             . "|| mt5credit.credit_latency_ms(now(), now() - interval '1 s')"
             . " || ' ' || mt5credit.credit_latency_ms(now(), now() + "
             . "interval '1.2345 s')"),
   '0.25 300 +Inf 0 1235', 'the latency buckets and milliseconds unchanged');

done_testing;
