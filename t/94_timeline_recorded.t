#!/usr/bin/perl
#
# A failover or a restore that lost no claim (issue 31, item 6).  The
# database is copied while no worker runs, payments are acknowledged,
# and the copy comes back promoted (a new timeline), as a restore to a
# point or an asynchronous failover brings it.  Measured on 3998e8d
# (t/92's second restore, and this file's first run): the worker logged
# "database timeline 2 -> 3" and did nothing else: no case, no backfill,
# the acknowledged payments lost until a person thought of declaring the
# restore.  Since 073 the database records each timeline it runs on.
# This makes impossible:
#   - a timeline the database has not recorded going unhandled: the
#     first worker to see it records it and starts a rewind's handling,
#     a database_timeline_changed case (high) naming both timelines, an
#     ALERT, a backfill of every Stripe event since an hour before the
#     last change kept, a case for a provider no program can list
#   - a pending credit of the copy claimed with no lookup: it is looked
#     up in MT5 first (pending > unknown), and ends done with one deal
#   - two workers that see it at once handling it twice: one case, one
#     rewind, one backfill request
#   - a recorded timeline handled again: a worker's restart on it, or the
#     first timeline (the one migrate ran on), opens nothing
#   - a numbering the lost timeline used given out again: the next credit
#     is numbered past a million more than the copy's newest

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $PGBIN = $Mt5Credit::Sandbox::PGBIN;
my $data = $sb->dir . '/pg';
my $LOGIN = 70941;
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
$st->account(login => $LOGIN);

sub cases {
    my ($kind) = @_;
    return $sb->psql("SELECT severity, details::text FROM mt5credit.case "
                     . "WHERE kind = '$kind' ORDER BY id");
}

sub alerts {
    my ($name) = @_;
    return scalar(() = $st->worker_log($name)
                       =~ /ALERT alert=database_timeline_changed /g);
}

# ---------------------------------------------------- the first timeline

is($sb->sql1("SELECT count(*) || ' ' || min(timeline) || ' ' "
             . "|| min(recorded_by) FROM mt5credit.database_timeline"),
   '1 1 migration 073', 'migrate recorded the timeline it ran on');

my $first = $st->pay(login => $LOGIN, amount => 1001);
$st->start_worker('w1', %fast);
ok($st->wait_status($first, 'done', 30), 'a worker credits on it');
$st->stop_worker('w1');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE kind IN "
             . "('database_timeline_changed', 'database_rewound')"), 0,
   '... and opens no case: the timeline is recorded');
is($sb->sql1('SELECT count(*) FROM mt5credit.database_rewind'), 0,
   '... and starts no rewind');

# ------------------------------------- a copy, then what it will not hold

# a payment pending in the copy; another provider's deposit, which no
# program can list the events of
my $kept = $st->pay(login => $LOGIN, amount => 1002);
$sb->create_deposit(client => 'alice', login => $LOGIN, amount => 1003,
                    provider => 'checkout');

$sb->stop_postgres;
system('cp', '-a', $data, "$data-copy") == 0 or die 'cp';
$sb->start_postgres;

my @lost = map { $st->pay(login => $LOGIN, amount => 1010 + $_) } 1 .. 2;
is(scalar(grep { $st->status_of($_) eq 'pending' } $kept, @lost), 3,
   'three payments acknowledged, none claimed');
my $newest = $sb->sql1('SELECT max(id) FROM mt5credit.mt5_credit');

# the copy comes back, promoted
$sb->stop_postgres;
system('rm', '-rf', $data) == 0 or die;
rename "$data-copy", $data or die "rename: $!";
open my $fh, '>', "$data/standby.signal" or die;
close $fh;
$sb->start_postgres;
Mt5Credit::Sandbox::run_cmd("$PGBIN/pg_ctl", '-D', $data, '-w', 'promote');
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1('SELECT pg_is_in_recovery()') eq 'f' }, 30),
   'the copy is promoted');
is($sb->sql1("SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)"),
   '00000002', '... on timeline 2');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE id IN ("
             . join(',', @lost) . ')'), 0,
   '... without the two payments acknowledged after the copy');

# --------------------------------------- two workers see it at the same time

$st->start_worker($_, %fast) for qw(w1 w2);
ok(Mt5Credit::Worker::wait_for(sub {
       $st->status_of($kept) eq 'done' }, 60),
   'the pending payment of the copy ends done');
sleep 1;

my $changed = cases('database_timeline_changed');
is(scalar(@$changed), 1, 'one database_timeline_changed case, for two '
   . 'workers that saw the timeline')
    or diag explain $changed;
is($changed->[0][0], 'high', '... high: it may have lost nothing');
like($changed->[0][1], qr/"timeline": 2\b/, '... naming the new timeline');
like($changed->[0][1], qr/"known_timeline": 1\b/, '... and the one before');
is(alerts('w1') + alerts('w2'), 1, '... an ALERT by the worker that '
   . 'recorded it, none by the other');
is(scalar(@{ cases('database_rewound') }), 0,
   'no database_rewound case: no claim was lost');

my ($rewind, $noticed) = @{ $sb->psql("SELECT id, noticed_by FROM "
                                      . "mt5credit.database_rewind")->[0] };
is($sb->sql1('SELECT count(*) FROM mt5credit.database_rewind'), 1,
   'one rewind started');
is($sb->sql1("SELECT rewind_id FROM mt5credit.database_timeline "
             . "WHERE timeline = 2"), $rewind,
   '... recorded with the timeline it came with');
like($noticed, qr/^w[12]$/, "... by a worker ($noticed)");
is($sb->sql1("SELECT count(*) FROM mt5credit.backfill_request WHERE "
             . "provider = 'stripe' AND every_event AND since <= "
             . "(SELECT lost_from FROM mt5credit.database_rewind) "
             . "- interval '1 hour'"), 1,
   'every Stripe event since an hour before the last change kept is asked '
   . 'for again');
is($sb->sql1("SELECT string_agg(severity || ' ' || (details->>'provider'), "
             . "',') FROM mt5credit.case "
             . "WHERE kind = 'events_lost_in_rewind'"), 'high checkout',
   'a provider whose events no program lists: a case to have them sent '
   . 'again (high, as the change that may have lost them)');

like(join(' ', @{ $st->history_of($kept) }), qr/pending>unknown/,
     'the pending payment was looked up before any call');
is(scalar @{ $st->deals_of($kept) }, 1, '... and has one deal');

# ----------------------------------------------- a recorded timeline again

$st->stop_worker($_) for qw(w1 w2);
$st->start_worker('w1', %fast);
my $next = $st->pay(login => $LOGIN, amount => 1020);
ok($st->wait_status($next, 'done', 30), 'a worker started again credits');
$st->stop_worker('w1');
is(scalar(@{ cases('database_timeline_changed') }), 1,
   '... and handles the recorded timeline no more');
is($sb->sql1('SELECT count(*) FROM mt5credit.database_rewind'), 1,
   '... no second rewind');
cmp_ok($next, '>', $kept + 1_000_000,
       'the next credit is numbered a million past the copy\'s newest');
cmp_ok($next, '>', $newest, '... so past those the lost timeline gave out');

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

done_testing;
