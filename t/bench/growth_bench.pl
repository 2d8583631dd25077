#!/usr/bin/perl
#
# make bench (growth part): what the database keeps per payment, table by
# table, so the retention and partitioning decisions of docs/operations.md
# ("Retention", "Growth and partitioning") are read from figures, not
# guessed.  N deposits, each paid by a signed Stripe webhook through the
# edge and credited by a worker on the MT5 simulator: the lifecycle every
# payment has.  Then, after VACUUM, each table's size with its indexes and
# TOAST, divided by N, with and without the raw bodies retention empties
# after its days.
#
#   BENCH_GROWTH_PAYMENTS=2000 make bench

use strict;
use warnings;

use Time::HiRes qw(time);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

$| = 1;

my $N = $ENV{BENCH_GROWTH_PAYMENTS} || 2000;
my $LOGINS = 20;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 72000 + $_) for 1 .. $LOGINS;
$st->start_worker('w1');

my $t0 = time;
my @ids = map { $st->pay(login => 72000 + 1 + $_ % $LOGINS,
                         amount => 1000 + $_) } 1 .. $N;
Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
              . "WHERE status = 'done'") == $N }, 600)
    or die "growth: not every credit ended done\n";
$st->stop_worker('w1');
my $took = time - $t0;

$sb->psql('VACUUM (ANALYZE)');

# every table of the schema, with indexes and TOAST
my $rows = $sb->psql(<<'SQL');
SELECT c.relname,
       pg_total_relation_size(c.oid),
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'mt5credit' AND c.relkind IN ('r', 'p')
ORDER BY 2 DESC
SQL
my $bodies = $sb->sql1("SELECT sum(length(raw_body)) FROM "
                       . "mt5credit.webhook_event");
my $total = 0;
$total += $_->[1] for @$rows;

# an empty schema's size: what does not grow with payments
my $empty = Mt5Credit::Sandbox->new;
$empty->start_postgres;
$empty->psql('VACUUM');
my %base = map { $_->[0] => $_->[1] } @{ $empty->psql(<<'SQL') };
SELECT c.relname, pg_total_relation_size(c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'mt5credit' AND c.relkind IN ('r', 'p')
SQL
my $base = 0;
$base += $_ for values %base;

printf "growth: %d payments paid through the edge and credited in %.1f s\n",
       $N, $took;
printf "growth: %-28s %12s %10s\n", 'table', 'bytes/pay', 'indexes';
for my $r (@$rows) {
    my $grew = $r->[1] - ($base{ $r->[0] } // 0);
    next if $grew < $N;             # under a byte a payment: not growing
    printf "growth: %-28s %12.0f %10d\n", $r->[0], $grew / $N, $r->[2];
}
my $per = ($total - $base) / $N;
my $body = $bodies / $N;
printf "growth: all tables: %.0f bytes a payment, of which %.0f raw "
       . "webhook body (emptied by retention after its days)\n", $per, $body;
printf "growth: a year at %s payments a day: %.1f GB kept for good, "
       . "%.1f GB more of bodies until retention\n", $_,
       ($per - $body) * $_ * 365 / 1e9, $body * $_ * 365 / 1e9
    for 1_000, 10_000, 100_000;

$empty->teardown;
