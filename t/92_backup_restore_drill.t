#!/usr/bin/perl
#
# The backup and restore drill of docs/operations.md ("Backups and
# point-in-time recovery"), with pgBackRest as Debian ships it: WAL
# archived by archive_command, a full backup, money moving, a restore
# point, more money moving, then the cluster restored from the backup and
# the archive to that point and promoted (a new timeline), and the
# workers started on it as they would be after a real restore.
#
# Ten payments to one MT5 login, all acknowledged by the edge:
#   A (3)  credited before the point
#   D (2)  stored before the point, credited after it
#   B (3)  stored and credited after the point
#   C (2)  stored after the point, never credited
# The restore keeps A and D (D pending again), loses B and C; MT5, which
# no restore rewinds, keeps the deals of A, D and B.  This makes
# impossible:
#   - a backup or an archive that cannot restore: stanza-create, check and
#     a full backup succeed, the restore reaches the named point and
#     promotes, and the rows of the point are there (A done, D pending)
#     while those after it are not (B, C)
#   - a restore the workers do not notice: the worker's kept claim names
#     a credit of the lost timeline; one database_rewind row, one critical
#     database_rewound case naming the two credits to look up, an ALERT in
#     the worker's log
#   - a restore a person cannot follow with the checklist's commands:
#     `mt5credit cases list` shows the case, backfill_requests_list() the
#     request finished, `mt5credit status` ten credits done, none pending,
#     unknown or failed, and the case open
#   - the lost acknowledged webhooks left lost: a backfill of every event
#     of the window is asked for Stripe, and its next run ingests B and C
#   - a payment credited twice: D (pending again, its deal in MT5) and B
#     (stored again by the backfill) are looked up first and recorded with
#     the lost timeline's deals; exactly one deal per credit reference, ten
#     in all, and the login's balance is the ten payments' sum
#   - a payment never credited: C is credited once on the new timeline
#   - a restored cluster that archives no more: pgbackrest check passes on
#     the new timeline, and a backup of it is taken (and restores, below)
#
# Then a restore no kept claim can tell: two payments (E) acknowledged
# after a second point while no worker claimed anything.  Restored from
# the new backup, every claim kept is still there; measured on 3998e8d,
# the worker logged "database timeline 2 -> 3" and did nothing else, and
# the restore had to be declared by hand.  Since 073 the database records
# each timeline it runs on.  This makes impossible:
#   - the restore going unhandled: the worker finds timeline 3 unrecorded,
#     opens a database_timeline_changed case and asks a backfill of every
#     event, and its run ingests E, credited once each

use strict;
use warnings;

use JSON::PP;
use Test::More;
use Time::HiRes qw(time);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my $KEY = 'rk_test_drill_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);
my $json = JSON::PP->new->canonical;
my $t0 = time;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $dir = $sb->dir;
my $data = "$dir/pg";
my $LOGIN = 70921;
$st->account(login => $LOGIN);

my $state = $sb->write_file('stripe-state.json', '{}');
my $port = Mt5Credit::Sandbox::free_port();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $port,
           $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, 'stripesim');

my %fast = (call_timeout => 1, lease => 8, settle_margin => 1,
            provider_api_url => "http://127.0.0.1:$port",
            provider_api_key_file => $sb->write_file('stripe-api.key',
                                                     "$KEY\n"));
my $conf = $st->worker_config('w1', %fast);

# ------------------------------------------------------------ pgBackRest
#
# Everything it reads and writes is under the test's directory: its
# configuration (given with --config on every call, archive_command and
# the restore_command it writes included), the repository, its lock,
# log and spool paths.

my $STANZA = 'mt5credit';
my $br = "$dir/pgbackrest";
mkdir $br or die "mkdir $br: $!";
mkdir "$br/$_" or die "mkdir $br/$_: $!" for qw(repo lock log spool);
my $brconf = $sb->write_file('pgbackrest/pgbackrest.conf', <<"CONF");
[global]
repo1-path=$br/repo
repo1-retention-full=2
lock-path=$br/lock
log-path=$br/log
spool-path=$br/spool
log-level-console=warn
log-level-file=detail
compress-type=lz4
start-fast=y
archive-timeout=30

[$STANZA]
pg1-path=$data
pg1-port=${\ $sb->pg_port }
pg1-socket-path=$dir
pg1-user=mt5
CONF
my @BR = ('pgbackrest', "--config=$brconf", "--stanza=$STANZA");

sub pgbackrest {
    my (@args) = @_;
    my $pid = open(my $fh, '-|') // die "fork: $!";
    if (!$pid) {
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        exec @BR, @args or POSIX::_exit(127);
    }
    local $/;
    my $out = <$fh> // '';
    close $fh;
    return ($? >> 8, $out);
}

$sb->psql("ALTER SYSTEM SET archive_mode = 'on'");
$sb->psql("ALTER SYSTEM SET archive_command = "
          . "'@BR archive-push %p'");
$sb->stop_postgres;
$sb->start_postgres;
is($sb->sql1('SHOW archive_mode'), 'on', 'archive_mode is on');

my ($rc, $out) = pgbackrest('stanza-create');
is($rc, 0, 'stanza-create') or diag $out;
($rc, $out) = pgbackrest('check');
is($rc, 0, 'check: the archive receives WAL') or diag $out;

# ---------------------------------------------------------------- money

# the portal's deposits with their Checkout Sessions, all before the
# point; the provider's list of events knows each one it delivers
my %pay;
for my $g ([ A => 3 ], [ D => 2 ], [ B => 3 ], [ C => 2 ], [ E => 2 ]) {
    my ($group, $n) = @$g;
    for my $i (1 .. $n) {
        my $amount = 3000 + 100 * ord($group) + $i;
        my $pi = "pi_drill_${group}$i";
        my $dep = $sb->create_deposit(client => 'alice', login => $LOGIN,
                                      amount => $amount,
                                      key => "drill-$group$i");
        my $body = stripe_event(deposit => $dep, amount => $amount, pi => $pi);
        my $cs = $json->decode($body)->{data}{object};
        $sb->psql("SELECT mt5credit.deposit_set_session('alice', "
                  . "'$cs->{client_reference_id}', '$cs->{id}')",
                  user => 'portal');
        push @{ $pay{$group} }, { pi => $pi, body => $body,
                                  amount => $amount };
    }
}
my @all = map { @{ $pay{$_} } } qw(A D B C);

($rc, $out) = pgbackrest('backup', '--type=full');
is($rc, 0, 'a full backup') or diag $out;
($rc, $out) = pgbackrest('info', '--output=json');
my $info = eval { $json->decode($out) } || [];
is(scalar @{ $info->[0]{backup} || [] }, 1, '... listed by info');

sub deliver {
    my ($p) = @_;
    $sb->http('POST', '/control/event', port => $port,
              body => $json->encode({ body => $p->{body}, delivered => 1 }),
              headers => [ [ 'Content-Type', 'application/json' ] ]);
    my $res = $st->webhook($p->{body});
    is($res->{status}, 200, "$p->{pi}: acknowledged");
}

sub credit_of {
    my ($pi) = @_;
    return $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
                     . "WHERE provider_payment_id = '$pi'");
}

sub all_done {
    my (@p) = @_;
    return Mt5Credit::Worker::wait_for(sub {
        !grep { my $c = credit_of($_->{pi});
                !$c || $st->status_of($c) ne 'done' } @p }, 60);
}

sub deals_on {
    return [ grep { $_->{Login} eq $LOGIN } @{ $sim->ledger->{deals} } ];
}

# a payment's recorded deal, and the deals under its reference ('-': no
# credit)
sub ticket_of {
    my $c = credit_of($_[0]{pi});
    return $c ? $st->credit($c)->{ticket} : '-';
}

sub deals_under {
    my $c = credit_of($_[0]{pi});
    return $c ? scalar @{ $st->deals_of($c) } : '-';
}

# A: credited before the point
deliver($_) for @{ $pay{A} };
$st->start_worker('w1', %fast);
ok(all_done(@{ $pay{A} }), 'A: three credited');
$st->stop_worker('w1');

# D: stored before the point, not credited yet
deliver($_) for @{ $pay{D} };

my $POINT = 'drill-before-the-loss';
$sb->psql("SELECT pg_create_restore_point('$POINT')");

# the window the restore loses: D and B credited, C stored only
$st->start_worker('w1', %fast);
deliver($_) for @{ $pay{B} };
ok(all_done(@{ $pay{D} }, @{ $pay{B} }), 'D and B: credited after the point');
$st->stop_worker('w1');
deliver($_) for @{ $pay{C} };
my %ticket = map { $_->{pi} => ticket_of($_) } map { @{ $pay{$_} } } qw(D B);
is(scalar @{ deals_on() }, 8, 'eight deals in MT5 (A, D, B)');

# the last segments reach the archive (check switches WAL and waits)
($rc, $out) = pgbackrest('check');
is($rc, 0, 'check: the WAL of the window is archived') or diag $out;

# -------------------------------------------------------------- restore

# stopped, restored into an emptied data directory, started, promoted
sub restore_to {
    my ($point, $timeline) = @_;
    $sb->stop_postgres;
    system('rm', '-rf', $data) == 0 or die;
    mkdir $data, 0700 or die "mkdir $data: $!";
    my ($rc, $out) = pgbackrest('restore', '--type=name', "--target=$point",
                                '--target-action=promote');
    is($rc, 0, "restored to the point '$point'") or diag $out;
    like(scalar(`cat $data/postgresql.auto.conf`),
         qr/restore_command = 'pgbackrest --config=\Q$brconf\E /,
         '... its restore_command reads this configuration');
    $sb->start_postgres;
    ok(Mt5Credit::Worker::wait_for(sub {
           $sb->sql1('SELECT pg_is_in_recovery()') eq 'f' }, 60),
       '... and promoted');
    is($sb->sql1('SELECT substr(pg_walfile_name(pg_current_wal_lsn()), '
                 . '1, 8)'), sprintf('%08d', $timeline),
       "... on a new timeline, $timeline");
}

restore_to($POINT, 2);

is(join(' ', map { my $c = credit_of($_->{pi});
                   $c ? $st->status_of($c) : '-' } @all),
   'done done done pending pending - - - - -',
   'A done, D pending again, B and C gone');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event"), 5,
   '... with their webhooks: five of the ten acknowledged');
is(scalar @{ deals_on() }, 8, 'MT5 still has the eight deals');

# -------------------------------------------------------- the workers

$st->start_worker('w1', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.case "
                 . "WHERE kind = 'database_rewound'") >= 1 }, 30),
   'the worker notices the restore');
is($sb->sql1("SELECT count(*) || ' ' || min(severity) FROM mt5credit.case "
             . "WHERE kind = 'database_rewound'"), '1 critical',
   '... one critical database_rewound case');
is($sb->sql1("SELECT details->>'credits_to_look_up' FROM mt5credit.case "
             . "WHERE kind = 'database_rewound'"), 2,
   '... naming two credits to look up (D, pending again)');
is($sb->sql1("SELECT count(*) FROM mt5credit.database_rewind"), 1,
   '... one database_rewind row');
is($sb->sql1("SELECT count(*) FROM mt5credit.case "
             . "WHERE kind = 'database_timeline_changed'"), 0,
   '... handled once: the rewind recorded timeline 2, which is not then '
   . 'handled again as unrecorded');
like($st->worker_log('w1'), qr/ALERT alert=database_rewound /,
     '... and an alert in the worker\'s log');
is($sb->sql1("SELECT provider || ' ' || every_event FROM "
             . "mt5credit.backfill_request"), 'stripe true',
   '... a backfill of every event of the window asked for Stripe');

my $desk = 'host=127.0.0.1 port=' . $sb->pg_port
           . ' dbname=mt5credit user=ops_alice';
($rc, $out) = Mt5Credit::Worker::run($sb, 'cases', '--database', $desk,
                                     'list', '--kind', 'database_rewound');
like($out, qr/database_rewound/, "'mt5credit cases list' shows it to a person")
    or diag $out;

ok(all_done(@{ $pay{D} }), 'D: done again');
is(join(' ', map { ticket_of($_) } @{ $pay{D} }),
   join(' ', map { $ticket{ $_->{pi} } } @{ $pay{D} }),
   "... with the lost timeline's deals, found in MT5");

# the backfill's next run (its timer)
($rc, $out) = Mt5Credit::Worker::run($sb, 'backfill', 'stripe', '-c', $conf,
                                     '--since', '1h');
is($rc, 0, 'the backfill runs') or diag $out;
like($out, qr/backfill stripe: 10 listed; 5 ingested/,
     '... and ingests the five lost events (B and C)') or diag $out;

is($sb->sql1("SELECT count(*) FILTER (WHERE finished_at IS NOT NULL) "
             . "|| '/' || count(*) FROM mt5credit.backfill_requests_list()",
             user => 'ops_alice'), '1/1',
   '... finishing the request, as a person sees it');

ok(all_done(@all), 'all ten payments end done');
is(join(' ', map { ticket_of($_) } @{ $pay{B} }),
   join(' ', map { $ticket{ $_->{pi} } } @{ $pay{B} }),
   "B: recorded with the lost timeline's deals");
my $deals = deals_on();
is(scalar @$deals, 10, 'ten deals for ten payments');
is(join(' ', map { deals_under($_) } @all),
   join(' ', (1) x 10), 'exactly one deal under each credit reference');
my $sum = 0;
$sum += $_->{amount} for @all;
my $cents = 0;
$cents += sprintf('%.0f', $_->{Profit} * 100) for @$deals;
is($cents, $sum, "the login's deals add up to the ten payments");
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE status <> "
             . "'done'"), 0, 'no credit left pending, unknown or failed');

($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--prometheus',
                                     '-c', $conf);
is($rc, 0, "'mt5credit status'") or diag $out;
like($out, qr/^mt5credit_credits\{kind="deposit",status="done"\} 10$/m,
     '... ten deposit credits done');
unlike($out, qr/^mt5credit_credits\{[^}]*status="(?:pending|unknown|failed)"\} [1-9]/m,
       '... none pending, unknown or failed');
like($out, qr/^mt5credit_open_cases\{kind="database_rewound",severity="critical"\} 1$/m,
     '... the rewind\'s case open, for a person to resolve');

# again: nothing more
($rc, $out) = Mt5Credit::Worker::run($sb, 'backfill', 'stripe', '-c', $conf,
                                     '--since', '1h');
is($rc, 0, 'a second backfill run');
sleep 2;
is(scalar @{ deals_on() }, 10, '... makes no deal');
$st->stop_worker('w1');

# ------------------------------------------- the archive goes on after it

($rc, $out) = pgbackrest('check');
is($rc, 0, 'check passes on the new timeline') or diag $out;
($rc, $out) = pgbackrest('backup', '--type=full');
is($rc, 0, 'a new full backup of the restored cluster') or diag $out;

# ------------------------------- a restore that no kept claim can tell
#
# After the second point no credit is claimed: two payments (E) are
# acknowledged while the workers are stopped.  The restore loses them,
# and every claim kept is still in the database.  Timeline 3 is one the
# database has not recorded: the worker handles it as a rewind.

my $POINT2 = 'drill-second';
$sb->psql("SELECT pg_create_restore_point('$POINT2')");
deliver($_) for @{ $pay{E} };
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit"), 12,
   'E: stored after the second point');
($rc, $out) = pgbackrest('check');
is($rc, 0, 'check: archived') or diag $out;

restore_to($POINT2, 3);
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit"), 10,
   'E: gone with the lost time');
is($sb->sql1("SELECT string_agg(timeline::text, ' ' ORDER BY timeline) "
             . "FROM mt5credit.database_timeline"), '1 2',
   '... and so is any record of timeline 3');

$st->start_worker('w1', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.case "
                 . "WHERE kind = 'database_timeline_changed'") == 1 }, 30),
   'the worker finds timeline 3 unrecorded: a database_timeline_changed '
   . 'case');
like($st->worker_log('w1'), qr/ALERT alert=database_timeline_changed /,
     '... an ALERT');
is($sb->sql1("SELECT count(*) FROM mt5credit.case "
             . "WHERE kind = 'database_rewound' AND status <> 'resolved'"), 1,
   '... and no database_rewound case: no claim kept was lost');
is($sb->sql1("SELECT count(*) FROM mt5credit.backfill_request "
             . "WHERE finished_at IS NULL AND every_event"), 1,
   '... a backfill of every event of the window asked');
($rc, $out) = Mt5Credit::Worker::run($sb, 'backfill', 'stripe', '-c', $conf,
                                     '--since', '1h');
is($rc, 0, 'the backfill runs') or diag $out;
like($out, qr/backfill stripe: 12 listed; 2 ingested/,
     '... and ingests the two lost events (E)') or diag $out;
ok(all_done(@{ $pay{E} }), 'E: credited');
is(scalar @{ deals_on() }, 12, 'twelve deals for twelve payments');
is(join(' ', map { deals_under($_) } @all, @{ $pay{E} }),
   join(' ', (1) x 12), '... one under each credit reference');
$st->stop_worker('w1');

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');
note(sprintf('drill: %.1f s', time - $t0));

done_testing;
