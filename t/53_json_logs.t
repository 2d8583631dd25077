#!/usr/bin/perl
#
# log_format = json for the batch programs: one JSON object a line, with
# the subject of the line as fields.  Impossible:
#   - a line that is not one JSON object (a parser in the log pipeline
#     dropping it), whatever the message holds
#   - a credit's lines without its credit, ref, server and login as fields
#   - a misspelt format accepted

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70901);
my $credit = $st->pay(login => 70901, amount => 4200);

my $conf = $st->worker_config('json1', log_format => 'json');
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($rc, 0, 'a worker round with log_format = json') or diag $out;
is($st->status_of($credit), 'done', '... makes the credit');

my @lines = grep { length } split /\n/, $out;
cmp_ok(scalar @lines, '>=', 3, scalar(@lines) . ' log lines');
my @objects = map { eval { decode_json($_) } } @lines;
is(scalar(grep { ref $_ eq 'HASH' } @objects), scalar @lines,
   'every line is one JSON object') or diag $out;
is(scalar(grep { ($_->{program} // '') eq 'mt5credit-work'
                 && ($_->{time} // '') =~ /^\d{4}-\d\d-\d\dT[\d:.]+Z$/
                 && ($_->{level} // '') =~ /^(debug|info|warn|error|alert)$/
                 && ($_->{pid} // '') =~ /^\d+$/ && defined $_->{msg} }
           @objects), scalar @lines,
   '... each with time, program, pid, level and msg');

my ($made) = grep { ($_->{credit} // '') eq $credit && ($_->{login} // '') }
             @objects;
ok($made, "a line about credit $credit, with it as a field") or diag $out;
is($made->{ref}, $st->ref_of($credit), '... its ref');
is($made->{login}, '70901', '... its login');
my ($deal) = grep { ($_->{credit} // '') eq $credit && ($_->{msg} // '') =~ /deal/ }
             @objects;
ok($deal, '... and the line of its deal') or diag $out;
is($deal->{ref}, $st->ref_of($credit), '... whose ref carries no trailing colon');

my $bad = $sb->write_file('bad-format.conf',
    "database = \"host=127.0.0.1\"\nlog_format = xml\n");
($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $bad);
is($rc, 2, 'log_format = xml is refused');
like($out, qr/bad-format\.conf: log_format "xml": text or json/,
     '... naming the file and the choices');

done_testing;
