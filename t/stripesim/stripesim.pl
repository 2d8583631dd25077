#!/usr/bin/perl
#
# A test double of the Stripe API calls `mt5credit poll-provider` makes:
# GET /v1/checkout/sessions/<id> and /v1/payment_intents/<pi_...> with
# "Authorization: Bearer <key>".
# Sessions come from a JSON file the test rewrites at will (read on every
# request), each {"status", "payment_status", "amount_total", "currency",
# "client_reference_id", "payment_intent", ...} and optionally a fault:
#   "delay": seconds before answering (a timeout, for a short client),
#   "http": a status to answer with instead (500, 404, ...),
#   "other_id": answer about another session (an answer not to trust).
# Every request is appended to <state>.log as "<path> <auth ok 0|1>".
#
# And, like Stripe after a payment, it sends the signed webhook:
#   POST /control/pay {"session": id, "url": "http://127.0.0.1:P/path",
#                      "secret": "whsec_...", "lose": 0|1}
# marks the session complete and paid, then delivers (or, with "lose",
# drops) checkout.session.completed, signed as Stripe signs (HMAC-SHA256
# over "<t>.<body>"); it answers with the webhook's HTTP status, or 0.
#
#   stripesim.pl PORT STATE.json KEY

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex);
use IO::Socket::INET;
use JSON::PP;

my ($port, $state, $key) = @ARGV;
die "usage: stripesim.pl PORT STATE.json KEY\n" unless $key;

my $json = JSON::PP->new->canonical;
my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                                Listen => 16, ReuseAddr => 1)
    or die "listen 127.0.0.1:$port: $!";
$SIG{CHLD} = 'IGNORE';
print "stripesim: listening on $port\n";

while (my $c = $srv->accept) {
    my $pid = fork;
    if (defined $pid && $pid == 0) {
        answer($c);
        exit 0;
    }
    close $c;
}

sub answer {
    my ($c) = @_;
    local $/ = "\r\n";
    my $line = <$c> // return;
    my ($method, $path) = split / /, $line;
    my ($auth, $length) = (0, 0);
    while (defined(my $h = <$c>)) {
        last if $h eq "\r\n";
        $auth = 1 if $h =~ /^Authorization: Bearer \Q$key\E\r\n$/i;
        $length = $1 if $h =~ /^Content-Length: (\d+)\r\n$/i;
    }
    if (open my $log, '>>', "$state.log") {
        print $log "$path $auth\n";
        close $log;
    }
    return pay($c, $length) if $method eq 'POST' && $path eq '/control/pay';
    return reply($c, 401, { error => { type => 'invalid_request_error',
                                       message => 'Invalid API Key' } })
        unless $auth;
    my ($kind, $id) =
        $path =~ m{^/v1/(checkout/sessions|payment_intents)/([A-Za-z0-9_]+)$};
    return reply($c, 404, { error => { message => 'No such route' } })
        unless $method eq 'GET' && $id;
    my $object = $kind eq 'payment_intents' ? 'payment_intent'
                                            : 'checkout.session';

    my $sessions = do {
        open my $f, '<', $state or return reply($c, 500, {});
        local $/;
        $json->decode(<$f>);
    };
    my $s = $sessions->{$id}
        or return reply($c, 404, { error => { type => 'invalid_request_error',
            message => "No such checkout.session: '$id'" } });
    sleep $s->{delay} if $s->{delay};
    return reply($c, $s->{http}, { error => { message => 'injected' } })
        if $s->{http};
    return reply($c, 404, { error => { message => "No such $object" } })
        if ($id =~ /^pi_/) != ($object eq 'payment_intent');
    my %o = (id => $s->{other_id} // $id, object => $object,
             mode => 'payment', livemode => JSON::PP::false,
             metadata => { deposit_id => $s->{client_reference_id} },
             map { $_ => $s->{$_} } grep { !/^(delay|http|other_id)$/ }
             keys %$s);
    return reply($c, 200, \%o);
}

sub reply {
    my ($c, $status, $body) = @_;
    my $text = $json->encode($body);
    print $c "HTTP/1.1 $status X\r\nContent-Type: application/json\r\n"
           . "Content-Length: " . length($text) . "\r\nConnection: close\r\n"
           . "\r\n$text";
    close $c;
}

sub pay {
    my ($c, $length) = @_;
    my $text = '';
    read($c, $text, $length) if $length;
    my $req = eval { $json->decode($text) } || {};
    my $sessions = do {
        open my $f, '<', $state or return reply($c, 500, {});
        $json->decode(<$f>);
    };
    my $s = $sessions->{ $req->{session} }
        or return reply($c, 404, { error => 'no such session' });
    @$s{qw(status payment_status)} = ('complete', 'paid');
    open my $f, '>', "$state.tmp" or return reply($c, 500, {});
    print $f $json->encode($sessions);
    close $f;
    rename "$state.tmp", $state;

    return reply($c, 200, { delivered => 0 }) if $req->{lose};

    my %object = (id => $req->{session}, object => 'checkout.session',
                  mode => 'payment', %$s);
    my $body = $json->encode({ id => 'evt_sim_' . $req->{session},
                               object => 'event', type =>
                               'checkout.session.completed',
                               data => { object => \%object } });
    my $t = time;
    my $sig = "t=$t,v1=" . hmac_sha256_hex("$t.$body", $req->{secret});
    my ($host, $port, $path) = $req->{url} =~ m{^http://([^:/]+):(\d+)(/.*)$}
        or return reply($c, 400, { error => 'url' });
    my $w = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port)
        or return reply($c, 200, { delivered => 0 });
    print $w "POST $path HTTP/1.1\r\nHost: $host\r\n"
           . "Content-Type: application/json\r\nStripe-Signature: $sig\r\n"
           . "Content-Length: " . length($body) . "\r\nConnection: close\r\n"
           . "\r\n$body";
    my $status = (<$w> // '') =~ m{^HTTP/1\.[01] (\d+)} ? $1 : 0;
    close $w;
    return reply($c, 200, { delivered => $status + 0 });
}
