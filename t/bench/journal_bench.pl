#!/usr/bin/perl
#
# make bench (journal part, sql/081): what the money journal costs and
# how long checking it takes.
#
#   1. ingest_batch() of a day of BENCH_JOURNAL_DEPOSITS deposits in a
#      database with the journal's triggers and in one without them, twice
#      each, alternated, the fastest of each kept: the time in the database
#      (psql's own start left out).  Goal: 10 % or less.
#   2. BENCH_JOURNAL_ENTRIES entries (case actions on 10,000 cases, written
#      through the triggers as the desk writes them), sealed, then
#      `mt5credit audit verify` over all of them: every chain recomputed,
#      every fact compared, the period's Merkle root.  Goal: 10 s or less
#      for 1 million.
#
#   BENCH_JOURNAL_DEPOSITS=3000 BENCH_JOURNAL_ENTRIES=1000000 make bench

use strict;
use warnings;

use Time::HiRes qw(time);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Bench qw(ingest_batches);
use Mt5Credit::Worker;

$| = 1;

my $N = $ENV{BENCH_JOURNAL_DEPOSITS} // 3000;    # 0: this part skipped
my $ENTRIES = $ENV{BENCH_JOURNAL_ENTRIES} || 1_000_000;
my $BATCH = 50;
my $SIGNED_AT = int(time);

my @TRIGGERS = qw(credit_history deposit_history payout_history
                  withdrawal_refund_history case_action withdrawal
                  money_proposal risk_rule_change webhook_event);

# --- 1. what it costs ingest ---------------------------------------------------

sub ingest_day {
    my ($journal) = @_;
    my $sb = Mt5Credit::Sandbox->new;
    $sb->start_postgres;
    unless ($journal) {
        $sb->psql(join '', map { "ALTER TABLE mt5credit.$_ DISABLE TRIGGER "
                                 . "${_}_journal;\n" } @TRIGGERS);
    }
    $sb->psql("SELECT mt5credit.register_account('c' || g, 'live1', "
              . "80000 + g, 'USD') FROM generate_series(1, 1000) g",
              user => 'portal');
    my $refs = $sb->psql("SELECT g, (mt5credit.create_deposit("
        . "'c' || (1 + g % 1000), 'day-key-' || g, 'stripe', 'live1', "
        . "80000 + 1 + g % 1000, 1000 + g, 'USD')).reference "
        . "FROM generate_series(1, $N) g", user => 'portal');

    my $secs = ingest_batches($sb, $SIGNED_AT, $BATCH,
        map { { ref => $_->[1], pi => "pi_$_->[0]", amount => 1000 + $_->[0] } }
        @$refs);
    my $credits = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit");
    my $entries = $sb->sql1("SELECT count(*) FROM mt5credit.journal");
    die "journal bench: $credits credits of $N deposits\n" unless $credits == $N;
    $sb->teardown;
    return ($secs, $entries);
}

# alternated, the fastest of each kept: one database's luck is not a cost
my ($without, $with, $entries);
for my $round ($N ? (1 .. 2) : ()) {
    my ($t0, $none) = ingest_day(0);
    die "journal bench: $none entries with the triggers off\n" if $none;
    my ($t1, $n) = ingest_day(1);
    $without = $t0 if !defined $without || $t0 < $without;
    $with = $t1 if !defined $with || $t1 < $with;
    $entries = $n;
}
printf "journal: ingest_batch() of %d deposits in batches of %d, time in "
       . "the database: %.0f deposits/s without the journal, %.0f with it "
       . "(%d entries, %.1f a deposit): it costs %.1f %%\n", $N, $BATCH,
       $N / $without, $N / $with, $entries, $entries / $N,
       100 * ($with - $without) / $without if $N;

# --- 2. verify over a million entries --------------------------------------------

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $cases = 10_000;
my $per = int($ENTRIES / $cases);
$sb->psql("INSERT INTO mt5credit.case (kind, severity, dedupe_key, "
          . "opened_by) SELECT 'bench_case', 'low', 'bench:' || g, 'bench' "
          . "FROM generate_series(1, $cases) g");
my $t0 = time;
for my $round (1 .. $per) {
    # one action on every case a statement, as desks add them over time
    $sb->psql("INSERT INTO mt5credit.case_action (case_id, action, actor, "
              . "before, after, note) SELECT id, 'note', 'ops_' || (id % 7), "
              . "jsonb_build_object('status', 'open'), "
              . "jsonb_build_object('status', 'open', 'round', $round), "
              . "'looked at the deposit and the MT5 deals, round $round' "
              . "FROM mt5credit.case WHERE kind = 'bench_case'");
}
my $wrote = time - $t0;
my $n = $sb->sql1("SELECT count(*) FROM mt5credit.journal");
printf "journal: %d entries written through the triggers in %.1f s "
       . "(%.0f a second)\n", $n, $wrote, $n / $wrote;

mkdir $sb->dir . '/witness';
my $key = $sb->dir . '/witness/audit.key';
system('openssl', 'genpkey', '-algorithm', 'ed25519', '-out', $key) == 0
    or die 'openssl genpkey';
system('openssl', 'pkey', '-in', $key, '-pubout', '-out',
       $sb->dir . '/witness/audit.pub') == 0 or die 'openssl pkey';
$sb->psql('CREATE ROLE auditor LOGIN IN ROLE mt5credit_audit; VACUUM ANALYZE');
my $conn = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit '
           . 'user=auditor';

$t0 = time;
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'audit', 'seal', '--key', $key,
    '--heads', $sb->dir . '/witness/heads', '--database', $conn);
my $sealed = time - $t0;
die "journal bench: seal: $out" if $rc;

$t0 = time;
($rc, $out) = Mt5Credit::Worker::run($sb, 'audit', 'verify', '--pubkey',
    $sb->dir . '/witness/audit.pub', '--heads', $sb->dir . '/witness/heads',
    '--database', $conn);
my $verified = time - $t0;
die "journal bench: verify: $out" if $rc;
my ($phases) = $out =~ /\((chains [^)]*)\)/;
printf "journal: seal of %d entries: %.1f s; verify of all of them (chains, "
       . "facts, the signed root): %.1f s (%s)\n", $n, $sealed, $verified,
       $phases // '?';
$sb->teardown;
