#!/usr/bin/perl
#
# make bench (journal part, sql/081): what the money journal costs and
# how long checking it takes.
#
#   1. ingest_batch() of a day of BENCH_JOURNAL_DEPOSITS deposits, the
#      same batches sent alternately to a copy of one database with the
#      journal and one without (its triggers off), BENCH_JOURNAL_ROUNDS
#      rounds, each side's batches on one kept connection:
#      each round, the median and the spread, on the database's clock
#      and on its backend's CPU time; then the journal's share of
#      ingest_batch()'s time (pg_stat_user_functions).  Goal: 10 % or
#      less.  BENCH_JOURNAL_OFF (a pattern) turns off only the journal
#      triggers it matches: what that part costs.
#   2. BENCH_JOURNAL_ENTRIES entries (case actions on 10,000 cases, written
#      through the triggers as the desk writes them), sealed, then
#      `mt5credit audit verify` over all of them: every chain recomputed,
#      every fact compared, the period's Merkle root.  Goal: 10 s or less
#      for 1 million.
#
#   BENCH_JOURNAL_DEPOSITS=3000 BENCH_JOURNAL_ROUNDS=3 \
#   BENCH_JOURNAL_ENTRIES=1000000 make bench

use strict;
use warnings;

use Time::HiRes qw(time);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Bench qw(ingest_one_batch psql_session);
use Mt5Credit::Worker;

$| = 1;

my $N = $ENV{BENCH_JOURNAL_DEPOSITS} // 3000;    # 0: this part skipped
my $ENTRIES = $ENV{BENCH_JOURNAL_ENTRIES} || 1_000_000;
my $ROUNDS = $ENV{BENCH_JOURNAL_ROUNDS} || 3;
my $BATCH = 50;
# kept: each side's batches on one connection, as the edge's pool keeps
# its connections; new: a new connection (and backend) each batch, which
# adds each backend's first planning of the journal's statements
my $CONNECTION = $ENV{BENCH_JOURNAL_CONNECTION} || 'kept';
die "BENCH_JOURNAL_CONNECTION: kept or new, not $CONNECTION\n"
    unless $CONNECTION =~ /^(kept|new)$/;
my $SIGNED_AT = int(time);

# The database without the journal: every journal trigger off, as the
# catalogue lists them; BENCH_JOURNAL_OFF, a pattern, turns off only the
# triggers it matches (what one part of the journal costs)
my $OFF = $ENV{BENCH_JOURNAL_OFF} || '_journal';
sub without_journal {
    my ($sb) = @_;
    my @t = grep { $_->[1] =~ /$OFF/ }
        @{ $sb->psql("SELECT tgrelid::regclass, tgname FROM pg_trigger "
                     . "WHERE tgname LIKE '%\\_journal%' ORDER BY 1, 2") };
    die "BENCH_JOURNAL_OFF: no journal trigger matches $OFF\n" unless @t;
    return join '', map { "ALTER TABLE $_->[0] DISABLE TRIGGER $_->[1];\n" }
        @t;
}

# --- 1. what it costs ingest ---------------------------------------------------
#
# One server, one database of BENCH_JOURNAL_DEPOSITS open deposits as a
# template; each round copies it twice, the journal's triggers off in one
# copy, and sends the same batches to both, batch by batch, which goes
# first alternating.  Other load on the machine then falls on both sides
# alike; a round's cost is the sum with over the sum without.  Two
# clocks: the database's (wall, what the edge waits) and its backend's
# time on a CPU (what the journal's work is, whatever else runs).  Last, a
# copy with track_functions = 'all' says which share of ingest_batch()'s
# own time is the journal's functions.

sub median {
    my @s = sort { $a <=> $b } @_;
    return @s % 2 ? $s[$#s / 2] : ($s[@s / 2 - 1] + $s[@s / 2]) / 2;
}

sub ingest_cost {
    my $sb = Mt5Credit::Sandbox->new;
    $sb->start_postgres;
    my $without = without_journal($sb);
    $sb->psql('GRANT pg_read_server_files TO edge; '
              . 'GRANT EXECUTE ON FUNCTION pg_read_file(text) TO edge');
    $sb->psql("SELECT mt5credit.register_account('c' || g, 'live1', "
              . "80000 + g, 'USD') FROM generate_series(1, 1000) g",
              user => 'portal');
    my $refs = $sb->psql("SELECT g, (mt5credit.create_deposit("
        . "'c' || (1 + g % 1000), 'day-key-' || g, 'stripe', 'live1', "
        . "80000 + 1 + g % 1000, 1000 + g, 'USD')).reference "
        . "FROM generate_series(1, $N) g", user => 'portal');
    my @p = map { { ref => $_->[1], pi => "pi_$_->[0]",
                    amount => 1000 + $_->[0] } } @$refs;
    # the same plans on both sides: statistics taken once, in the
    # template, and no autovacuum taking new ones in one copy mid-round
    $sb->psql("ANALYZE; ALTER SYSTEM SET autovacuum = off; "
              . "SELECT pg_reload_conf(); CHECKPOINT");
    my @chunks;
    push @chunks, [ @p[$_ .. ($_ + $BATCH > @p ? @p : $_ + $BATCH) - 1] ]
        for map { $_ * $BATCH } 0 .. int((@p - 1) / $BATCH);

    my $copy = sub {
        my ($name, $journal, $setting) = @_;
        $sb->psql("CREATE DATABASE $name TEMPLATE mt5credit "
                  . "STRATEGY FILE_COPY");
        $sb->psql($setting, db => $name) if $setting;
        $sb->psql($without, db => $name) unless $journal;
    };
    my $check = sub {
        my ($name, $entries) = @_;
        my $credits = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit",
                                db => $name);
        die "journal bench: $credits credits of $N deposits\n"
            unless $credits == $N;
        my $n = $sb->sql1("SELECT count(*) FROM mt5credit.journal",
                          db => $name);
        my $before = $sb->sql1("SELECT count(*) FROM mt5credit.journal");
        die "journal bench: $n entries, $before before the day\n"
            if $entries ? $n <= $before
                        : $n != $before && $OFF eq '_journal';
        return $n - $before;
    };

    my (@wall, @cpu, $entries, $tw0, $tw1, $tc0, $tc1);
    for my $round (1 .. $ROUNDS) {
        $copy->('bench_without', 0);
        $copy->('bench_with', 1);
        my %t = map { $_ => [0, 0] } qw(bench_without bench_with);
        my %session = $CONNECTION eq 'kept'
            ? map { $_ => psql_session($sb, db => $_) }
                  qw(bench_without bench_with)
            : ();
        for my $k (0 .. $#chunks) {
            my @order = ($k + $round) % 2 ? qw(bench_with bench_without)
                                          : qw(bench_without bench_with);
            for my $db (@order) {
                my ($w, $c) = ingest_one_batch($sb, $SIGNED_AT, $chunks[$k],
                                               db => $db, cpu => 1,
                                               session => $session{$db});
                $t{$db}[0] += $w;
                $t{$db}[1] += $c;
            }
        }
        $_->() for values %session;
        $check->('bench_without', 0);
        $entries = $check->('bench_with', 1);
        my ($w0, $c0) = @{ $t{bench_without} };
        my ($w1, $c1) = @{ $t{bench_with} };
        push @wall, 100 * ($w1 - $w0) / $w0;
        push @cpu, 100 * ($c1 - $c0) / $c0;
        $tw0 += $w0; $tw1 += $w1; $tc0 += $c0; $tc1 += $c1;
        printf "journal: round %d: without %.2f s (CPU %.2f s), with %.2f s "
               . "(CPU %.2f s): %.1f %% (CPU %.1f %%)\n", $round, $w0, $c0,
               $w1, $c1, $wall[-1], $cpu[-1];
        $sb->psql("DROP DATABASE $_") for qw(bench_without bench_with);
    }

    # where ingest_batch()'s time goes (the timing itself costs a little)
    $copy->('bench_profile', 1, "SELECT pg_stat_reset()");
    $sb->psql("ALTER DATABASE bench_profile SET track_functions = 'all'");
    my $profile = $CONNECTION eq 'kept'
        ? psql_session($sb, db => 'bench_profile') : undef;
    ingest_one_batch($sb, $SIGNED_AT, $_, db => 'bench_profile',
                     session => $profile)
        for @chunks;
    $profile->() if $profile;
    $check->('bench_profile', 1);
    sleep 1;    # the last backend's counts reach the statistics
    my %f = map { $_->[0] => [ @$_[1, 2, 3] ] } @{ $sb->psql(
        "SELECT funcname, calls, total_time, self_time "
        . "FROM pg_stat_user_functions WHERE schemaname = 'mt5credit'",
        db => 'bench_profile') };
    my $total = $f{ingest_batch}[1] || 1;
    # the row trigger, a statement's stored webhooks (088) and a batch's
    # history rows (093)
    my $journal = 0;
    $journal += $f{$_} ? $f{$_}[1] : 0
        for qw(journal_record journal_record_events journal_record_ingest);
    $sb->teardown;
    return (\@wall, \@cpu, $entries, $tw0, $tw1, $tc0, $tc1,
            100 * $journal / $total, 1000 * $journal / $N);
}

if ($N) {
    my ($wall, $cpu, $entries, $tw0, $tw1, $tc0, $tc1, $share, $per)
        = ingest_cost();
    printf "journal: ingest_batch() of %d deposits in batches of %d "
           . "(connection: %s), %d rounds, %d entries (%.1f a deposit): it "
           . "costs %.1f %% of the time in the database (median; %.1f to "
           . "%.1f; all rounds together %.1f %%: %.0f deposits/s without, "
           . "%.0f with), "
           . "%.1f %% of its CPU time (median; %.1f to %.1f; together "
           . "%.1f %%)\n", $N, $BATCH, $CONNECTION, scalar @$wall,
           $entries, $entries / $N, median(@$wall),
           (sort { $a <=> $b } @$wall)[0], (sort { $b <=> $a } @$wall)[0],
           100 * ($tw1 - $tw0) / $tw0,
           $N * @$wall / $tw0, $N * @$wall / $tw1, median(@$cpu),
           (sort { $a <=> $b } @$cpu)[0], (sort { $b <=> $a } @$cpu)[0],
           100 * ($tc1 - $tc0) / $tc0;
    printf "journal: pg_stat_user_functions: the journal's functions are "
           . "%.1f %% of ingest_batch()'s time, %.1f us a deposit\n", $share,
           $per;
}

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
