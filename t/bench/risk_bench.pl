#!/usr/bin/perl
#
# make bench (risk part): a clean day of ordinary deposits through the
# risk rules of sql/079 (docs/risk.md), with the false-hold rate printed
# (nothing in the day is planted, so every hold is a false one), and what
# judging costs ingest_batch(): the same day in a database without rules
# and in one with them.
#
# The day: BENCH_RISK_CLIENTS clients with one login each, every one
# credited once two days before (so none is a first deposit), and
# BENCH_RISK_DEPOSITS deposits among them at random, in amounts the way
# a retail book has them (mostly tens and hundreds, a few thousands, one
# in a hundred over 5,000 USD).  The rules are docs/risk.md's example
# set.
#
#   BENCH_RISK_DEPOSITS=3000 BENCH_RISK_CLIENTS=1000 make bench

use strict;
use warnings;

use Time::HiRes qw(time);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Bench qw(ingest_batches);

$| = 1;

my $N = $ENV{BENCH_RISK_DEPOSITS} || 3000;
my $CLIENTS = $ENV{BENCH_RISK_CLIENTS} || 1000;
my $BATCH = 50;
my $SIGNED_AT = int(time);

srand($ENV{BENCH_RISK_SEED} || 33);

# the example rule set: rule, currency, limit
my @RULES = ([ 'credit_amount', 'USD', '10000.00' ],
             [ 'login_count_24h', undef, '10' ],
             [ 'client_sum_24h', 'USD', '25000.00' ],
             [ 'first_deposit', undef, undef ]);

sub amount {
    my $r = rand;
    return 1000 + int(rand(19000))      if $r < 0.50;   #  10 ..  200 USD
    return 20000 + int(rand(80000))     if $r < 0.90;   # 200 .. 1000
    return 100000 + int(rand(400000))   if $r < 0.99;   # 1000 .. 5000
    return 500000 + int(rand(1500000));                 # 5000 .. 20000
}

my @day = map { { i => $_, client => 1 + int(rand($CLIENTS)),
                 amount => amount() } } 1 .. $N;

sub lit { return defined $_[0] ? "'$_[0]'" : 'NULL' }

# one database: clients, their credited past, the day's deposits
sub setup {
    my ($rules) = @_;
    my $sb = Mt5Credit::Sandbox->new;
    $sb->start_postgres;
    $sb->psql("SELECT mt5credit.register_account('c' || g, 'live1', "
              . "80000 + g, 'USD') FROM generate_series(1, $CLIENTS) g",
              user => 'portal');

    # yesterday's (the day before's) credited deposits: none is a first
    my $past = $sb->psql("SELECT g, (mt5credit.create_deposit('c' || g, "
        . "'past-key-' || g, 'stripe', 'live1', 80000 + g, 5000, 'USD'))"
        . ".reference FROM generate_series(1, $CLIENTS) g", user => 'portal');
    ingest($sb, map { { ref => $_->[1], amount => 5000,
                        pi => "pi_past_$_->[0]" } } @$past);
    $sb->psql(<<'SQL');
SET session_replication_role = replica;
UPDATE mt5credit.mt5_credit
SET status = 'done', attempts = 1, mt5_deal_ticket = 900000 + id,
    created_at = now() - interval '2 days';
SQL

    if ($rules) {
        for my $r (@RULES) {
            my $c = $sb->sql1("SELECT mt5credit.risk_rule_propose("
                . "'$r->[0]', " . lit($r->[1]) . ", NULL, " . lit($r->[2])
                . ", false, 'bench')", user => 'ops_alice');
            $sb->sql1("SELECT mt5credit.risk_rule_decide($c, 'approve', "
                      . "'bench')", user => 'ops_bob');
        }
    }

    my %ref = map { $_->[0] => $_->[1] } @{ $sb->psql(
        "SELECT v.i, (mt5credit.create_deposit('c' || v.c, 'day-key-' || v.i, "
        . "'stripe', 'live1', 80000 + v.c, v.a, 'USD')).reference FROM "
        . "(VALUES " . join(',', map { "($_, $day[$_ - 1]{client}, "
                                        . "$day[$_ - 1]{amount})" } 1 .. $N)
        . ") AS v (i, c, a)", user => 'portal') };
    $_->{ref} = $ref{ $_->{i} } for @day;
    return $sb;
}

# deliveries through ingest_batch() as the edge sends them, $BATCH a call
sub ingest {
    my ($sb, @p) = @_;
    return ingest_batches($sb, $SIGNED_AT, $BATCH, @p);
}

my %took;
my %held;
for my $rules (0, 1) {
    my $sb = setup($rules);
    my @pay = map { { ref => $_->{ref}, amount => $_->{amount},
                      pi => "pi_day_$_->{i}" } } @day;
    $took{$rules} = ingest($sb, @pay);
    my $made = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                         . "WHERE mt5_deal_ticket IS NULL");
    # a credit per deposit: otherwise the day measured something else
    die "risk bench: $made credits of $N deposits\n" unless $made == $N;
    if ($rules) {
        %held = map { $_->[0] => $_->[1] } @{ $sb->psql(
            "SELECT coalesce(r->>'rule', '(any)'), count(DISTINCT c.id) "
            . "FROM mt5credit.mt5_credit c "
            . "LEFT JOIN LATERAL jsonb_array_elements(c.held_for) r ON true "
            . "WHERE c.status = 'held' "
            . "GROUP BY ROLLUP (r->>'rule')") };
    }
    $sb->teardown;
}

# the figures measure the rules only if they judged: every amount over the
# amount rule's limit is held under it
my $over = grep { $_->{amount} > 1000000 } @day;
die "risk bench: $over deposits over 10000.00 USD, "
    . ($held{credit_amount} // 0) . " held under credit_amount\n"
    unless $over == ($held{credit_amount} // 0);

my $all = $held{'(any)'} // 0;
printf "risk: a clean day: %d deposits of %d clients (each credited "
       . "before), rules: %s\n", $N, $CLIENTS,
       join(', ', map { $_->[0] . ($_->[2] ? " $_->[2]" : '')
                        . ($_->[1] ? " $_->[1]" : '') } @RULES);
printf "risk: held %d of %d: a false-hold rate of %.2f %%\n", $all, $N,
       100 * $all / $N;
printf "risk:   under %-18s %d\n", $_, $held{$_}
    for grep { $_ ne '(any)' } sort keys %held;
printf "risk: ingest_batch() of the day in batches of %d, time in the "
       . "database: %.0f deposits/s without rules, %.0f with them (judging "
       . "costs %.1f %%)\n", $BATCH,
       $N / $took{0}, $N / $took{1},
       100 * ($took{1} - $took{0}) / $took{0};
