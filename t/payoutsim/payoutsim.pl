#!/usr/bin/perl
#
# A test double of a bank-transfer PSP's payout API: the generic payout
# rail of docs/providers.md, as `mt5credit payout` (payout_rail generic)
# uses it, with "Authorization: Bearer <key>":
#   POST /v1/payouts {"reference", "amount_minor", "currency",
#        "beneficiary", "metadata"} with an Idempotency-Key: the same key
#        and body again is the same payout, the same key with another
#        body a 409 idempotency_error; a beneficiary token "bad_..." is
#        declined (422 beneficiary_invalid);
#   GET /v1/payouts/<id>;
#   GET /v1/payouts?reference=<ours> (every payout with it, has_more
#        false: a complete answer).
# Payouts start "pending"; POST /control/payout {"id", "status",
# "failure_code"} moves one (processing, paid, failed, returned) and, when
# POST /control/hook {"url", "secret"} named the edge, sends the signed
# status webhook (Standard Webhooks) payout.<status> there.
# Faults come from STATE.faults, read on every request, the Stripe
# double's set:
#   {"payout_post": "decline" | "drop_before" | "delay_after" |
#                   "http500_after" | "garbage_after",
#    "payout_delay": seconds, "payout_list": "http500" | "more_lie",
#    "payout_get": "http500"}
# GET /control/payouts shows the book, with each key's POST count.
#
#   payoutsim.pl PORT STATE KEY

use strict;
use warnings;

use FindBin;
use IO::Socket::INET;
use JSON::PP;

use lib "$FindBin::Bin/../lib";
use Mt5Credit::HttpDouble qw(serve reply read_body form locked);
use Mt5Credit::Provider qw(standard_headers);

my ($port, $state, $key) = @ARGV;
die "usage: payoutsim.pl PORT STATE KEY\n" unless $key;

my $json = JSON::PP->new->canonical;
serve($port, 'payoutsim', \&answer);

sub faults { Mt5Credit::HttpDouble::faults("$state.faults") }

sub book {
    locked($state, { payouts => [], posts => {}, keys => {}, hook => undef },
           $_[0]);
}

sub error {
    my ($c, $status, $type, $code, $message) = @_;
    return reply($c, $status, { error => { type => $type, code => $code,
                                           message => $message } });
}

sub answer {
    my ($c) = @_;
    local $/ = "\r\n";
    my $line = <$c> // return;
    my ($method, $path) = split / /, $line;
    my ($auth, $length, $idem) = (0, 0, '');
    while (defined(my $h = <$c>)) {
        last if $h eq "\r\n";
        $auth = 1 if $h =~ /^Authorization: Bearer \Q$key\E\r\n$/i;
        $length = $1 if $h =~ /^Content-Length: (\d+)\r\n$/i;
        $idem = $1 if $h =~ /^Idempotency-Key: (\S+)\r\n$/i;
    }
    if (open my $log, '>>', "$state.log") {
        print $log "$method $path $auth" . ($idem ? " $idem" : '') . "\n";
        close $log;
    }
    return reply($c, 200, book(sub { $_[0] }))
        if $method eq 'GET' && $path eq '/control/payouts';
    return control_hook($c, $length)
        if $method eq 'POST' && $path eq '/control/hook';
    return control_payout($c, $length)
        if $method eq 'POST' && $path eq '/control/payout';
    return error($c, 401, 'authentication_error', 'unauthorized',
                 'invalid API key') unless $auth;
    return post($c, $length, $idem)
        if $method eq 'POST' && $path eq '/v1/payouts';
    return get($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/payouts/([A-Za-z0-9_]+)$};
    return lookup($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/payouts\?(.*)$};
    return error($c, 404, 'invalid_request', 'not_found', 'no such route');
}

sub post {
    my ($c, $length, $idem) = @_;
    my $text = read_body($c, $length);
    my $fault = faults();
    my $mode = $fault->{payout_post} // '';
    return error($c, 400, 'invalid_request', 'idempotency_key_missing',
                 'an Idempotency-Key is required') unless $idem;
    my $req = eval { $json->decode($text) };
    return error($c, 400, 'invalid_request', 'malformed', 'not JSON')
        unless ref $req eq 'HASH';
    for my $f (qw(reference amount_minor currency beneficiary)) {
        return error($c, 400, 'invalid_request', 'parameter_missing',
                     "$f is required") unless defined $req->{$f};
    }

    if ($mode eq 'decline' || $req->{beneficiary} =~ /^bad_/) {
        book(sub { $_[0]{posts}{$idem}++ });
        return error($c, 422, 'invalid_request', 'beneficiary_invalid',
                     'the beneficiary cannot receive payouts');
    }
    if ($mode eq 'drop_before') {
        book(sub { $_[0]{posts}{$idem}++ });
        sleep($fault->{payout_delay} // 5);
        close $c;
        return;
    }

    my $canon = $json->encode($req);
    my ($status, $body) = @{ book(sub {
        my ($b) = @_;
        $b->{posts}{$idem}++;
        if (my $k = $b->{keys}{$idem}) {
            return [ 409, { error => { type => 'idempotency_error',
                code => 'idempotency_conflict',
                message => 'this key was used with another request' } } ]
                if $k->{body} ne $canon;
            my ($p) = grep { $_->{id} eq $k->{id} } @{ $b->{payouts} };
            return [ 200, $p ];
        }
        my $p = { id => 'bp_sim_' . (@{ $b->{payouts} } + 1),
                  object => 'payout', reference => $req->{reference},
                  amount_minor => $req->{amount_minor} + 0,
                  currency => uc $req->{currency},
                  beneficiary => $req->{beneficiary},
                  metadata => $req->{metadata} || {}, status => 'pending',
                  failure_code => undef, failure_message => undef,
                  created => time };
        push @{ $b->{payouts} }, $p;
        $b->{keys}{$idem} = { body => $canon, id => $p->{id} };
        return [ 201, $p ];
    }) };

    if ($mode eq 'delay_after') {
        sleep($fault->{payout_delay} // 5);
    } elsif ($mode eq 'http500_after') {
        return error($c, 500, 'api_error', 'internal', 'injected');
    } elsif ($mode eq 'garbage_after') {
        print $c "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
               . "Connection: close\r\n\r\nnot json!";
        close $c;
        return;
    }
    return reply($c, $status, $body);
}

sub get {
    my ($c, $id) = @_;
    return error($c, 500, 'api_error', 'internal', 'injected')
        if (faults()->{payout_get} // '') eq 'http500';
    my $p = book(sub { (grep { $_->{id} eq $id } @{ $_[0]{payouts} })[0] });
    return $p ? reply($c, 200, $p)
              : error($c, 404, 'invalid_request', 'not_found',
                      "no payout $id");
}

sub lookup {
    my ($c, $query) = @_;
    my $mode = faults()->{payout_list} // '';
    return error($c, 500, 'api_error', 'internal', 'injected')
        if $mode eq 'http500';
    my $ref = form($query)->{reference} // '';
    my @found = grep { $_->{reference} eq $ref }
                @{ book(sub { $_[0]{payouts} }) };
    return reply($c, 200, { object => 'list', data => \@found,
                            has_more => $mode eq 'more_lie'
                                        ? JSON::PP::true : JSON::PP::false });
}

sub control_hook {
    my ($c, $length) = @_;
    my $req = eval { $json->decode(read_body($c, $length)) } || {};
    book(sub { $_[0]{hook} = $req });
    return reply($c, 200, { ok => 1 });
}

sub control_payout {
    my ($c, $length) = @_;
    my $req = eval { $json->decode(read_body($c, $length)) } || {};
    my ($p, $hook) = @{ book(sub {
        my ($p) = grep { $_->{id} eq ($req->{id} // '') } @{ $_[0]{payouts} };
        if ($p) {
            $p->{status} = $req->{status};
            $p->{failure_code} = $req->{failure_code};
        }
        return [ $p, $_[0]{hook} ];
    }) };
    return error($c, 404, 'invalid_request', 'not_found', 'no such payout')
        unless $p;
    return reply($c, 200, { payout => $p, delivered => 0 }) unless $hook;

    # the PSP's status webhook: ids and the status, never bank details
    my $id = "evt_$p->{id}_$p->{status}_" . time;
    my $body = $json->encode({ id => $id, type => "payout.$p->{status}",
                               data => { payout_id => $p->{id},
                                         reference => $p->{reference},
                                         status => $p->{status} } });
    my ($host, $hport, $path) = $hook->{url} =~ m{^http://([^:/]+):(\d+)(/.*)$}
        or return reply($c, 400, { error => 'url' });
    my $w = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $hport)
        or return reply($c, 200, { payout => $p, delivered => 0 });
    my $headers = join '', map { "$_->[0]: $_->[1]\r\n" }
                  @{ standard_headers($hook->{secret}, $id, $body) };
    print $w "POST $path HTTP/1.1\r\nHost: $host\r\n$headers"
           . "Content-Length: " . length($body) . "\r\nConnection: close\r\n"
           . "\r\n$body";
    my $status = (<$w> // '') =~ m{^HTTP/1\.[01] (\d+)} ? $1 : 0;
    close $w;
    return reply($c, 200, { payout => $p, delivered => $status + 0 });
}
