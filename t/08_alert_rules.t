#!/usr/bin/perl
#
# The shipped alert rules (docs/examples/mt5credit-alerts.yml) against
# the metrics the programs really print.  Impossible:
#   - a rule naming a metric that neither the edge's status page,
#     `mt5credit status --prometheus`, a worker's own textfile nor the
#     outbound sender's (`mt5credit outbound`) has (a rename that left an
#     alert silent for ever)
#   - a rule without a severity, a summary or a runbook_url
#   - the dashboard not loading (invalid JSON), or a panel's query on a
#     metric that does not exist
#   - a rule promtool refuses, or one that does not fire on its series
#     (docs/examples/mt5credit-alerts.test.yml), or fires too soon
#   - a textfile for node-exporter written in place (a scrape reading half
#     of it), or a failed write replacing the last good one

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;

# every family the sources declare (# TYPE), with samples or not
my %family;
my $edge = $sb->http('GET', '/status');
is($edge->{status}, 200, "the edge's status page");
$family{$_} = 'edge' for $edge->{body} =~ /^# TYPE (\S+) /mg;
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--prometheus',
    '--database', 'host=127.0.0.1 port=' . $sb->pg_port
                  . ' dbname=mt5credit user=worker');
is($rc, 0, 'mt5credit status --prometheus') or diag $out;
$family{$_} = 'status' for $out =~ /^# TYPE (\S+) /mg;
# and a worker's own textfile (metrics_dir)
mkdir $sb->dir . '/textfile';
my $wconf = Mt5Credit::Worker::config($sb, 'alerts1',
    servers => [ [ 'live1', $st->sim ] ], metrics_dir => $sb->dir . '/textfile');
($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $wconf, '--once');
is($rc, 0, 'a worker round writing its textfile') or diag $out;
my $wtext = do { local $/;
                 open my $f, '<', $sb->dir . '/textfile/mt5credit-work-alerts1.prom'
                     or die $!;
                 <$f> };
$family{$_} = 'worker' for $wtext =~ /^# TYPE (\S+) /mg;
# and the outbound sender's (one endpoint, on a port nobody listens on:
# nothing is due, so nothing is sent; its database gauges are printed
# once the endpoint is registered)
my $secrets = $sb->write_file('crm.secrets',
    'whsec_' . 'QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB' . "\n");
chmod 0600, $secrets;
my $oconf = Mt5Credit::Worker::config($sb, 'alertsout',
    servers => [ [ 'live1', $st->sim ] ], metrics_dir => $sb->dir . '/textfile',
    outbound_database => '"host=127.0.0.1 port=' . $sb->pg_port
                         . ' dbname=mt5credit user=outbound"');
{
    open my $f, '>>', $oconf or die "$oconf: $!";
    print $f "\n[endpoint crm]\nurl = http://127.0.0.1:"
           . Mt5Credit::Sandbox::free_port() . "/hooks\n"
           . "secret_file = $secrets\n";
    close $f or die "$oconf: $!";
}
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbound', '-c', $oconf, '--once');
is($rc, 0, "an outbound sender's round writing its textfile") or diag $out;
my $otext = do { local $/;
                 open my $f, '<', $sb->dir . '/textfile/mt5credit-outbound-alertsout.prom'
                     or die $!;
                 <$f> };
$family{$_} = 'outbound' for $otext =~ /^# TYPE (\S+) /mg;
ok($family{mt5credit_outbound_oldest_undelivered_seconds},
   "... with the database's gauges") or diag $otext;
cmp_ok(scalar(keys %family), '>=', 20, scalar(keys %family)
       . ' metric families between them');

my $rules = do {
    open my $f, '<', "$Mt5Credit::Sandbox::ROOT/docs/examples/mt5credit-alerts.yml"
        or die $!;
    local $/;
    <$f>;
};
my @alerts = split /^\s+- alert: /m, $rules;
shift @alerts;
cmp_ok(scalar @alerts, '>=', 10, scalar(@alerts) . ' alert rules');

for my $a (@alerts) {
    my ($name) = $a =~ /^(\S+)/;
    my ($expr) = $a =~ /^\s+expr: (.*)$/m;
    my @used = ($expr // '') =~ /\b(mt5credit_[a-z0-9_]+)/g;
    ok(@used, "$name names a metric");
    for my $m (@used) {
        # a histogram's series carry their family's name plus a suffix
        (my $fam = $m) =~ s/_(bucket|count|sum)$//;
        ok($family{$m} || $family{$fam}, "$name: $m exists");
    }
    like($a, qr/severity: (?:page|ticket)\b/, "$name has a severity");
    like($a, qr/summary: "/, "$name has a summary");
    like($a, qr/runbook_url: "docs\/[a-z-]+\.md(?:#[a-z0-9_-]+)?"/,
         "$name has a runbook_url into the docs");
    if (my ($doc, $anchor) = $a =~ /runbook_url: "(docs\/[a-z-]+\.md)(?:#([a-z0-9_-]+))?"/) {
        my $text = do { local $/;
                        open my $f, '<', "$Mt5Credit::Sandbox::ROOT/$doc"
                            or die "$doc: $!";
                        <$f> };
        # GitHub's anchors: the heading, lower case, punctuation dropped
        my %slugs = map { (my $h = lc $_) =~ s/[^a-z0-9 _-]//g;
                          $h =~ s/ /-/g; ($h => 1) }
                    $text =~ /^#+ (.*)$/mg;
        ok(!defined $anchor || $slugs{$anchor},
           "$name: $doc" . ($anchor ? "#$anchor exists" : ' exists'));
    }
}

# --- the Grafana dashboard: valid JSON, every query on a metric that exists ----

{
    my $dash = eval {
        open my $f, '<', "$Mt5Credit::Sandbox::ROOT/docs/examples/mt5credit-dashboard.json"
            or die $!;
        local $/;
        JSON::PP->new->decode(<$f>);
    };
    ok($dash && ref $dash->{panels} eq 'ARRAY', 'the dashboard is valid JSON');
    my @exprs = map { $_->{expr} } map { @{ $_->{targets} || [] } }
                @{ $dash->{panels} || [] };
    cmp_ok(scalar @exprs, '>=', 10, scalar(@exprs) . ' queries in '
           . scalar(@{ $dash->{panels} || [] }) . ' panels');
    my @missing;
    for my $e (@exprs) {
        for my $m ($e =~ /\b(mt5credit_[a-z0-9_]+)/g) {
            (my $fam = $m) =~ s/_(bucket|count|sum)$//;
            push @missing, $m unless $family{$m} || $family{$fam};
        }
    }
    is_deeply(\@missing, [], '... every one naming a metric that exists');
}

# --- promtool: the rules parse, and their unit tests pass ----------------------

SKIP: {
    my $promtool = "$Mt5Credit::Sandbox::ROOT/build/tools/promtool";
    unless (-x $promtool) {
        fail('promtool is built (make promtool): CI must check the rules')
            if $ENV{CI};
        skip 'no build/tools/promtool (make promtool)', 4;
    }
    my $ex = "$Mt5Credit::Sandbox::ROOT/docs/examples";
    my $check = `$promtool check rules $ex/mt5credit-alerts.yml 2>&1`;
    is($?, 0, 'promtool check rules') or diag $check;
    like($check, qr/SUCCESS: \d+ rules found/, '... every rule parses');
    my $test = `cd $ex && $promtool test rules mt5credit-alerts.test.yml 2>&1`;
    is($?, 0, 'promtool test rules: each rule fires on its series, after '
       . 'its "for", and not before') or diag $test;
    like($test, qr/SUCCESS/, '... SUCCESS');
}

# --- status --textfile ------------------------------------------------------

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=worker';
my $prom = $sb->dir . '/mt5credit.prom';
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database', $db,
                                     '--textfile', $prom);
is($rc, 0, 'status --textfile') or diag $out;
is($out, '', '... prints nothing');
my $text = do { local $/; open my $f, '<', $prom or die; <$f> };
like($text, qr/^# TYPE mt5credit_credits gauge$/m, '... the file has the metrics');
like($text, qr/^mt5credit_build_info\{/m, '... all of them');
is(scalar(() = glob("$prom.tmp.*")), 0, '... and no temporary file is left');
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database',
    'host=127.0.0.1 port=1 dbname=mt5credit user=worker connect_timeout=2',
    '--textfile', $prom);
is($rc, 1, 'the database away: exit 1');
is(do { local $/; open my $f, '<', $prom or die; <$f> }, $text,
   '... and the last good file stays as it was');
is(scalar(() = glob("$prom.tmp.*")), 0, '... with no temporary file left');

done_testing;
