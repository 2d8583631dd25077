#!/usr/bin/perl
#
# sql/migrate as an upgrade runs it, next to a live system (issue 31,
# item 7).  Reproduced before, on 29185f3: a migration's DDL queued
# behind a long query waited without end, and every statement on that
# table after it waited behind it (a reader given 2 s timed out); there
# was no --status nor --dry-run, and "migrate --help" went to psql and
# ended in an error.  This makes impossible:
#   - a migration holding up the system: it waits for its locks at most
#     --lock-timeout, gives up whole, and tries again, waiting longer;
#     readers meanwhile go on
#   - a migration that could not get its locks applied in part, or
#     reported applied
#   - not knowing what a database holds: --status says, per migration,
#     applied (when, by whom) or pending, and a recorded one changed
#   - a dry run changing anything
#   - a typo in an option reaching the database

use strict;
use warnings;

use File::Temp qw(tempdir);
use POSIX qw(:sys_wait_h);
use Test::More;
use Time::HiRes qw(sleep time);

use lib 't/lib';
use Mt5Credit::Sandbox;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my @pg = $sb->psql_args;

# runs a command to completion; (exit status, output)
sub run {
    my (@cmd) = @_;
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        exec { $cmd[0] } @cmd or POSIX::_exit(127);
    }
    local $/;
    my $out = <$fh> // '';
    close $fh;
    return ($? >> 8, $out);
}

# a copy of the migrations, one more added: the next release's
my $tmp = tempdir(CLEANUP => 1);
system('cp', '-a', "$ROOT/sql", "$tmp/sql") == 0 or die;
open my $f, '>', "$tmp/sql/999_lock_test.sql" or die;
print $f "-- a test's migration: one column added\n"
       . "ALTER TABLE mt5credit.mt5_credit ADD COLUMN t86 integer;\n";
close $f;
my $next = "$tmp/sql/migrate";

sub recorded { $sb->sql1("SELECT count(*) FROM mt5credit.schema_migration") }
sub has_column {
    $sb->sql1("SELECT count(*) FROM pg_attribute WHERE attrelid = "
              . "'mt5credit.mt5_credit'::regclass AND attname = 't86'");
}

# ---- its own options --------------------------------------------------------

my ($rc, $out) = run("$ROOT/sql/migrate", '--help');
is($rc, 0, '--help: exit 0');
like($out, qr/^usage: sql\/migrate .*--status.*--dry-run.*--lock-timeout/s,
     '... its own usage, every option');
unlike($out, qr/^psql:|ERROR|invalid option/m, '... and nothing from psql');

($rc, $out) = run("$ROOT/sql/migrate", '--lock-timeout', '5x', @pg);
is($rc, 2, 'a bad --lock-timeout: exit 2');
like($out, qr/--lock-timeout "5x": a duration/, '... saying why');
($rc, $out) = run("$ROOT/sql/migrate", '--retries', 'many', @pg);
is($rc, 2, 'a bad --retries: exit 2');

# ---- --status, --dry-run ------------------------------------------------------

my $n = recorded();
($rc, $out) = run("$ROOT/sql/migrate", '--status', @pg);
is($rc, 0, '--status on an up-to-date database: exit 0');
like($out, qr/^applied  001_roles_and_schema  \d{4}-\d\d-\d\dT\S+ by \S+$/m,
     '... each migration applied, when and by whom');
like($out, qr/^migrate: 0 pending$/m, '... none pending');

($rc, $out) = run($next, '--status', @pg);
like($out, qr/^pending  999_lock_test$/m, 'the next release: its new one pending');
like($out, qr/^migrate: 1 pending$/m, '... one');

($rc, $out) = run($next, '--dry-run', @pg);
is($rc, 0, '--dry-run: exit 0');
like($out, qr/would apply 999_lock_test.*1 would be applied; nothing was/s,
     '... says what it would apply');
is(recorded() . ' ' . has_column(), "$n 0", '... and applies nothing');

my $changed = tempdir(CLEANUP => 1);
system('cp', '-a', "$ROOT/sql", "$changed/sql") == 0 or die;
open $f, '>>', "$changed/sql/002_currency.sql" or die;
print $f "-- edited after it was applied\n";
close $f;
($rc, $out) = run("$changed/sql/migrate", '--status', @pg);
is($rc, 1, '--status with a migration edited after it was applied: exit 1');
like($out, qr/002_currency\.sql changed after it was applied/, '... naming it');

# ---- a lock held by a long query ------------------------------------------------

my $long = $sb->psql_session;
$long->send('BEGIN; LOCK TABLE mt5credit.mt5_credit IN ACCESS SHARE MODE;'
            . " SELECT 'locked';");
my $until = time + 10;
sleep 0.05 until $long->output =~ /locked/ || time > $until;
like($long->output, qr/locked/, 'a long query holds the credits table');

my $t0 = time;
my $pid = open(my $mig, '-|') // die;
if (!$pid) {
    open STDERR, '>&', \*STDOUT;
    exec $next, '--lock-timeout', '300ms', '--retries', '2', @pg;
}
sleep 0.1;
my $reads = 0;
for (1 .. 10) {
    my $r = $sb->psql("SET statement_timeout = '2s'; "
                      . "SELECT count(*) FROM mt5credit.mt5_credit",
                      may_fail => 1);
    $reads++ if ref $r;
    sleep 0.2;
}
is($reads, 10, 'readers of the table go on while the migration waits');
my $mout = do { local $/; <$mig> };
close $mig;
is($? >> 8, 1, 'the lock never came: the migration gives up, exit 1');
like($mout, qr/999_lock_test: a lock was not to be had within 300ms \(try 1 of 3\)/,
     '... having tried again, saying so');
like($mout, qr/999_lock_test: its locks were not to be had within 300ms, 3 times; nothing of it is applied/,
     '... and why it stopped');
is(recorded() . ' ' . has_column(), "$n 0", '... nothing of it applied');

# the long query ends while a migration waits: applied
$pid = open($mig, '-|') // die;
if (!$pid) {
    open STDERR, '>&', \*STDOUT;
    exec $next, '--lock-timeout', '300ms', '--retries', '5', @pg;
}
sleep 1.5;
$long->send('COMMIT;');
$mout = do { local $/; <$mig> };
close $mig;
is($? >> 8, 0, 'the lock comes on a later try: exit 0') or diag $mout;
like($mout, qr/applied 999_lock_test/, '... applied');
is(recorded() . ' ' . has_column(), ($n + 1) . ' 1', '... and recorded');
$long->close;

done_testing;
