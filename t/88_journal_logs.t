#!/usr/bin/perl
#
# The worker's log as journald and a person at 3 a.m. read it (issue 31,
# item 4).  Reproduced before, on 29185f3: under systemd every line went
# to the journal at priority info (`journalctl -p err` was empty);
# libpq's messages kept their line breaks, so one error was three
# entries; with PostgreSQL down the worker tried and logged about 50
# times a minute, without backoff.  This makes impossible:
#   - an error the journal files as info: under systemd (stderr is the
#     stream JOURNAL_STREAM names) each line starts with its syslog
#     priority, <3> for an error, <6> for info; elsewhere, none
#   - one event split over entries: every line is one event
#   - a database that is down flooding the log: connects back off 1, 2,
#     4 ... s, and an error repeating the one before is counted, not
#     written again; its count goes out with the next line
#   - the worker not coming back once the database does

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70881);

# the worker's stderr, made first: its device and inode are the journal
# stream systemd would name
sub journal_worker {
    my ($name, %opt) = @_;
    my $log = $sb->dir . "/worker-$name.out";
    open my $f, '>>', $log or die;
    close $f;
    my @st = stat $log;
    local $ENV{JOURNAL_STREAM} = "$st[0]:$st[1]";
    $st->start_worker($name, %opt);
}

my $id = $st->pay(login => 70881, amount => 8800);
$sb->stop_postgres;

journal_worker('j1', poll_interval => 1, resolve_interval => 1,
               sweep_interval => 1);
sleep 9;
my $log = $st->worker_log('j1');
my @lines = split /\n/, $log;

is(scalar(grep { !/^<[0-7]>\d{4}-\d\d-\d\dT/ } @lines), 0,
   'under systemd every line starts with its priority, and is one event')
    or diag $log;
like($log, qr/^<6>\S+ mt5credit-work\[\d+\] INFO worker j1 started/m,
     'info is <6>');
like($log, qr/^<3>\S+ mt5credit-work\[\d+\] ERROR database: connection to server at "127\.0\.0\.1", port \d+ failed: Connection refused Is the server running on that host and accepting TCP\/IP connections\?$/m,
     "an error is <3>, libpq's three lines as one");
my $tries = () = $log =~ /ERROR database: connection to server/g;
cmp_ok($tries, '<=', 2, "9 s without the database: its error written "
       . "$tries time(s), the repeats counted");

$sb->start_postgres;
ok($st->wait_status($id, 'done', 40), 'the database back: the worker '
   . 'connects again, within its backoff, and credits');
$log = $st->worker_log('j1');
my ($failed) = $log =~ /INFO database: connected again after (\d+) failed tries/;
ok($failed, "... saying after how many tries ($failed)");
cmp_ok($failed, '<=', 7, '... 1, 2, 4, 8 ... s apart, not 50 a minute');
like($log, qr/^<3>\S+ .* ERROR the error before this one came \d+ more times?$/m,
     '... and how often the error came again, unwritten');
$st->stop_worker('j1');

# not under systemd: no priority
$st->start_worker('plain');
my $id2 = $st->pay(login => 70881, amount => 8801);
ok($st->wait_status($id2, 'done', 30), 'a worker not under systemd');
unlike($st->worker_log('plain'), qr/^</m, '... writes no priority');
$st->stop_worker('plain');

done_testing;
