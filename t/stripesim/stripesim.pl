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
# Payouts, as `mt5credit payout` uses them (kept in STATE.json.payouts):
#   POST /v1/payouts (form: amount, currency, destination, metadata[...];
#        Idempotency-Key header: the same key and parameters again is the
#        same payout, the same key with other parameters is an
#        idempotency_error; with a Stripe-Account header, the payout is
#        that connected account's, to its own bank account "ba_of_<acct>");
#   GET /v1/payouts/<id>;
#   GET /v1/payouts?limit=&created[gte]=&starting_after= (newest first,
#        has_more; the Stripe-Account's payouts, or the platform's own).
# Faults come from STATE.json.faults, read on every request:
#   {"payout_post": "decline" | "drop_before" | "delay_after" |
#                   "http500_after" | "garbage_after",
#    "payout_delay": seconds, "payout_list": "http500" | "more_lie",
#    "payout_get": "http500"}
# and POST /control/payout {"id", "status", "failure_code"} settles one;
# GET /control/payouts shows them all, with each key's POST count.
#
# Refunds, as the refund legs of a withdrawal use them (STATE.json.payouts
# too, under "refunds"):
#   POST /v1/refunds (form: payment_intent, amount, metadata[...];
#        Idempotency-Key as for payouts; the currency is the payment's,
#        STATE.json's entry for the PaymentIntent or usd, and an amount
#        over what is left of that entry's "amount" is declined as
#        Stripe does, amount_too_large);
#   GET /v1/refunds/<id>;
#   GET /v1/refunds?payment_intent=&limit=&starting_after= (newest first).
# Their faults: "refund_post" (the payout_post modes), "refund_delay",
# "refund_list": "http500" | "more_lie", "refund_get": "http500", and
# "refund_status": the status a new refund has (default succeeded).
# GET /v1/charges/ch_of_<pi> is the charge a refund names, with its card.
# POST /control/refund {"id", "status", "failure_reason"} settles one.
#
# Events, as `mt5credit backfill` reads them (STATE.json.events):
#   POST /control/event {"body": "<an event as sent>", "delivered": 0|1}
#        keeps it, with Stripe's delivery_success (a test that "loses" a
#        webhook simply never sends it, and keeps it here undelivered);
#   GET /v1/events?delivery_success=&created[gte]=&limit=&starting_after=
#        newest first, has_more, each event parsed as Stripe lists them;
#   GET /v1/events/<id>: the event's own bytes.
# Their faults: "events_list": "http500_page2" | "more_lie" (has_more on
# a last page that is short), "event_get": "other_id" | "http500".
#
#   stripesim.pl PORT STATE.json KEY

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex);
use FindBin;
use IO::Socket::INET;
use JSON::PP;

use lib "$FindBin::Bin/../lib";
use Mt5Credit::HttpDouble qw(serve reply read_body form locked);

my ($port, $state, $key) = @ARGV;
die "usage: stripesim.pl PORT STATE.json KEY\n" unless $key;

my $json = JSON::PP->new->canonical;
serve($port, 'stripesim', \&answer);

sub answer {
    my ($c) = @_;
    local $/ = "\r\n";
    my $line = <$c> // return;
    my ($method, $path) = split / /, $line;
    my ($auth, $length, $idem, $acct) = (0, 0, '', '');
    while (defined(my $h = <$c>)) {
        last if $h eq "\r\n";
        $auth = 1 if $h =~ /^Authorization: Bearer \Q$key\E\r\n$/i;
        $length = $1 if $h =~ /^Content-Length: (\d+)\r\n$/i;
        $idem = $1 if $h =~ /^Idempotency-Key: (\S+)\r\n$/i;
        $acct = $1 if $h =~ /^Stripe-Account: (\S+)\r\n$/i;
    }
    if (open my $log, '>>', "$state.log") {
        print $log "$path $auth" . ($idem ? " $method $idem" : '') . "\n";
        close $log;
    }
    return pay($c, $length) if $method eq 'POST' && $path eq '/control/pay';
    return control_payout($c, $length)
        if $method eq 'POST' && $path eq '/control/payout';
    return control_refund($c, $length)
        if $method eq 'POST' && $path eq '/control/refund';
    return reply($c, 200, payouts_locked(sub { $_[0] }))
        if $method eq 'GET' && $path eq '/control/payouts';
    return control_event($c, $length)
        if $method eq 'POST' && $path eq '/control/event';
    return reply($c, 401, { error => { type => 'invalid_request_error',
                                       message => 'Invalid API Key' } })
        unless $auth;
    return payout_post($c, $length, $idem, $acct)
        if $method eq 'POST' && $path eq '/v1/payouts';
    return payout_get($c, $1, $acct)
        if $method eq 'GET' && $path =~ m{^/v1/payouts/([A-Za-z0-9_]+)$};
    return payout_list($c, $1, $acct)
        if $method eq 'GET' && $path =~ m{^/v1/payouts(?:\?(.*))?$};
    return refund_post($c, $length, $idem)
        if $method eq 'POST' && $path eq '/v1/refunds';
    return refund_get($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/refunds/([A-Za-z0-9_]+)$};
    return refund_list($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/refunds(?:\?(.*))?$};
    return event_get($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/events/([A-Za-z0-9_]+)$};
    return event_list($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/events(?:\?(.*))?$};
    return charge_get($c, $1)
        if $method eq 'GET' && $path =~ m{^/v1/charges/ch_of_(pi_[A-Za-z0-9_]+)$};
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

# ------------------------------------------------------------- payouts

sub faults { Mt5Credit::HttpDouble::faults("$state.faults") }

# runs $fn on the payout book under a lock, writes it back; returns its value
sub payouts_locked {
    locked("$state.payouts", { payouts => [], posts => {}, keys => {} },
           $_[0]);
}

sub payout_post {
    my ($c, $length, $idem, $acct) = @_;
    my $f = form(read_body($c, $length));
    my $fault = faults();
    my $mode = $fault->{payout_post} // '';
    return reply($c, 400, { error => { type => 'invalid_request_error',
        message => 'an Idempotency-Key is required here' } }) unless $idem;

    if ($mode eq 'decline') {
        payouts_locked(sub { $_[0]{posts}{$idem}++ });
        return reply($c, 400, { error => { type => 'invalid_request_error',
            code => 'balance_insufficient',
            message => 'You have insufficient funds in your Stripe '
                       . 'account for this transfer.' } });
    }
    if ($mode eq 'drop_before') {
        payouts_locked(sub { $_[0]{posts}{$idem}++ });
        sleep($fault->{payout_delay} // 5);
        close $c;
        return;
    }

    my $params = join '&', map { "$_=$f->{$_}" } sort keys %$f;
    $params .= "&on=$acct" if $acct;
    my ($status, $body) = @{ payouts_locked(sub {
        my ($book) = @_;
        $book->{posts}{$idem}++;
        if (my $k = $book->{keys}{$idem}) {
            return [ 400, { error => { type => 'idempotency_error',
                message => 'Keys for idempotent requests can only be used '
                           . 'with the same parameters' } } ]
                if $k->{params} ne $params;
            my ($p) = grep { $_->{id} eq $k->{id} } @{ $book->{payouts} };
            return [ 200, $p ];
        }
        my %meta = map { /^metadata\[(.+)\]$/ ? ($1 => $f->{$_}) : () }
                   keys %$f;
        my $p = { id => 'po_sim_' . (@{ $book->{payouts} } + 1),
                  object => 'payout', amount => $f->{amount} + 0,
                  currency => $f->{currency},
                  # a connected account's payout goes to its own bank
                  destination => $acct ? "ba_of_$acct" : $f->{destination},
                  ($acct ? (account => $acct) : ()), status => 'pending',
                  metadata => \%meta, created => time,
                  failure_code => undef, failure_message => undef };
        push @{ $book->{payouts} }, $p;
        $book->{keys}{$idem} = { params => $params, id => $p->{id} };
        return [ 200, $p ];
    }) };

    if ($mode eq 'delay_after') {
        sleep($fault->{payout_delay} // 5);
    } elsif ($mode eq 'http500_after') {
        return reply($c, 500, { error => { type => 'api_error',
                                           message => 'injected' } });
    } elsif ($mode eq 'garbage_after') {
        print $c "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
               . "Connection: close\r\n\r\nnot json!";
        close $c;
        return;
    }
    return reply($c, $status, $body);
}

sub payout_get {
    my ($c, $id, $acct) = @_;
    return reply($c, 500, { error => { type => 'api_error' } })
        if (faults()->{payout_get} // '') eq 'http500';
    my $p = payouts_locked(sub {
        (grep { $_->{id} eq $id && ($_->{account} // '') eq $acct }
         @{ $_[0]{payouts} })[0] });
    return $p ? reply($c, 200, $p)
              : reply($c, 404, { error => { type => 'invalid_request_error',
                                            message => "No such payout: '$id'" } });
}

sub payout_list {
    my ($c, $query, $acct) = @_;
    my $mode = faults()->{payout_list} // '';
    return reply($c, 500, { error => { type => 'api_error' } })
        if $mode eq 'http500';
    return reply($c, 200, { object => 'list', data => [], has_more =>
                            JSON::PP::true, url => '/v1/payouts' })
        if $mode eq 'more_lie';
    my $q = form($query // '');
    my $limit = $q->{limit} || 10;
    my $gte = $q->{'created[gte]'} // 0;
    my @all = sort { $b->{created} <=> $a->{created}
                     || ($b->{id} =~ /(\d+)$/)[0] <=> ($a->{id} =~ /(\d+)$/)[0] }
              grep { $_->{created} >= $gte && ($_->{account} // '') eq $acct }
              @{ payouts_locked(sub { $_[0]{payouts} }) };
    if (my $after = $q->{starting_after}) {
        my ($i) = grep { $all[$_]{id} eq $after } 0 .. $#all;
        @all = defined $i ? @all[$i + 1 .. $#all] : ();
    }
    my @page = splice @all, 0, $limit;
    return reply($c, 200, { object => 'list', data => \@page,
                            has_more => @all ? JSON::PP::true
                                             : JSON::PP::false,
                            url => '/v1/payouts' });
}

sub control_payout {
    my ($c, $length) = @_;
    my $req = eval { $json->decode(read_body($c, $length)) } || {};
    my $p = payouts_locked(sub {
        my ($p) = grep { $_->{id} eq ($req->{id} // '') } @{ $_[0]{payouts} };
        if ($p) {
            $p->{status} = $req->{status};
            $p->{failure_code} = $req->{failure_code};
            $p->{failure_message} = $req->{failure_message};
        }
        return $p;
    });
    return $p ? reply($c, 200, $p) : reply($c, 404, { error => 'no such payout' });
}

# ------------------------------------------------------------- refunds

sub payment_entry {
    my ($pi) = @_;
    open my $f, '<', $state or return {};
    local $/;
    my $all = eval { $json->decode(<$f>) } || {};
    return $all->{$pi} || {};
}

sub refund_post {
    my ($c, $length, $idem) = @_;
    my $f = form(read_body($c, $length));
    my $fault = faults();
    my $mode = $fault->{refund_post} // '';
    return reply($c, 400, { error => { type => 'invalid_request_error',
        message => 'an Idempotency-Key is required here' } }) unless $idem;
    my $pi = $f->{payment_intent} // '';
    return reply($c, 400, { error => { type => 'invalid_request_error',
        code => 'parameter_missing',
        message => 'Must provide payment_intent or charge' } })
        unless $pi =~ /^pi_/;

    if ($mode eq 'decline') {
        payouts_locked(sub { $_[0]{posts}{$idem}++ });
        return reply($c, 400, { error => { type => 'invalid_request_error',
            code => 'charge_disputed',
            message => "Charge for $pi has been disputed." } });
    }
    if ($mode eq 'drop_before') {
        payouts_locked(sub { $_[0]{posts}{$idem}++ });
        sleep($fault->{refund_delay} // 5);
        close $c;
        return;
    }

    my $entry = payment_entry($pi);
    my $params = join '&', map { "$_=$f->{$_}" } sort keys %$f;
    my ($status, $body) = @{ payouts_locked(sub {
        my ($book) = @_;
        $book->{posts}{$idem}++;
        $book->{refunds} ||= [];
        if (my $k = $book->{keys}{$idem}) {
            return [ 400, { error => { type => 'idempotency_error',
                message => 'Keys for idempotent requests can only be used '
                           . 'with the same parameters' } } ]
                if $k->{params} ne $params;
            my ($r) = grep { $_->{id} eq $k->{id} } @{ $book->{refunds} };
            return [ 200, $r ];
        }
        if (defined $entry->{amount}) {
            my $left = $entry->{amount};
            $left -= $_->{amount} for grep {
                $_->{payment_intent} eq $pi
                && $_->{status} !~ /^(failed|canceled)$/ } @{ $book->{refunds} };
            return [ 400, { error => { type => 'invalid_request_error',
                code => 'amount_too_large',
                message => "Refund amount ($f->{amount}) is greater than "
                           . "unrefunded amount on charge ($left)" } } ]
                if $f->{amount} > $left;
        }
        my %meta = map { /^metadata\[(.+)\]$/ ? ($1 => $f->{$_}) : () }
                   keys %$f;
        my $r = { id => 're_sim_' . (@{ $book->{refunds} } + 1),
                  object => 'refund', amount => $f->{amount} + 0,
                  currency => lc($entry->{currency} // 'usd'),
                  payment_intent => $pi, charge => 'ch_of_' . $pi,
                  status => $fault->{refund_status} // 'succeeded',
                  metadata => \%meta, created => time,
                  failure_reason => undef };
        push @{ $book->{refunds} }, $r;
        $book->{keys}{$idem} = { params => $params, id => $r->{id} };
        return [ 200, $r ];
    }) };

    if ($mode eq 'delay_after') {
        sleep($fault->{refund_delay} // 5);
    } elsif ($mode eq 'http500_after') {
        return reply($c, 500, { error => { type => 'api_error',
                                           message => 'injected' } });
    } elsif ($mode eq 'garbage_after') {
        print $c "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
               . "Connection: close\r\n\r\nnot json!";
        close $c;
        return;
    }
    return reply($c, $status, $body);
}

sub refund_get {
    my ($c, $id) = @_;
    return reply($c, 500, { error => { type => 'api_error' } })
        if (faults()->{refund_get} // '') eq 'http500';
    my $r = payouts_locked(sub {
        (grep { $_->{id} eq $id } @{ $_[0]{refunds} || [] })[0] });
    return $r ? reply($c, 200, $r)
              : reply($c, 404, { error => { type => 'invalid_request_error',
                                            message => "No such refund: '$id'" } });
}

sub refund_list {
    my ($c, $query) = @_;
    my $mode = faults()->{refund_list} // '';
    return reply($c, 500, { error => { type => 'api_error' } })
        if $mode eq 'http500';
    return reply($c, 200, { object => 'list', data => [], has_more =>
                            JSON::PP::true, url => '/v1/refunds' })
        if $mode eq 'more_lie';
    my $q = form($query // '');
    my $limit = $q->{limit} || 10;
    my @all = sort { $b->{created} <=> $a->{created}
                     || ($b->{id} =~ /(\d+)$/)[0] <=> ($a->{id} =~ /(\d+)$/)[0] }
              grep { !$q->{payment_intent}
                     || $_->{payment_intent} eq $q->{payment_intent} }
              @{ payouts_locked(sub { $_[0]{refunds} || [] }) };
    if (my $after = $q->{starting_after}) {
        my ($i) = grep { $all[$_]{id} eq $after } 0 .. $#all;
        @all = defined $i ? @all[$i + 1 .. $#all] : ();
    }
    my @page = splice @all, 0, $limit;
    return reply($c, 200, { object => 'list', data => \@page,
                            has_more => @all ? JSON::PP::true
                                             : JSON::PP::false,
                            url => '/v1/refunds' });
}

sub control_refund {
    my ($c, $length) = @_;
    my $req = eval { $json->decode(read_body($c, $length)) } || {};
    my $r = payouts_locked(sub {
        my ($r) = grep { $_->{id} eq ($req->{id} // '') }
                  @{ $_[0]{refunds} || [] };
        if ($r) {
            $r->{status} = $req->{status};
            $r->{failure_reason} = $req->{failure_reason};
        }
        return $r;
    });
    return $r ? reply($c, 200, $r) : reply($c, 404, { error => 'no such refund' });
}

# the charge of a PaymentIntent the refunds were made on: its card, as
# STATE.json's entry names it ("brand", "last4"; visa 4242 by default)
sub charge_get {
    my ($c, $pi) = @_;
    my $e = payment_entry($pi);
    return reply($c, 200, { id => "ch_of_$pi", object => 'charge',
        payment_intent => $pi, amount => $e->{amount},
        currency => lc($e->{currency} // 'usd'),
        payment_method_details => { type => 'card',
            card => { brand => $e->{brand} // 'visa',
                      last4 => $e->{last4} // '4242' } } });
}


# ------------------------------------------------------------- events

sub events_locked {
    locked("$state.events", { events => [] }, $_[0]);
}

sub control_event {
    my ($c, $length) = @_;
    my $req = eval { $json->decode(read_body($c, $length)) } || {};
    my $e = eval { $json->decode($req->{body} // '') }
        or return reply($c, 400, { error => 'body is not an event' });
    events_locked(sub {
        push @{ $_[0]{events} }, { id => $e->{id}, created => $e->{created},
                                   body => $req->{body},
                                   delivered => $req->{delivered} ? 1 : 0 };
    });
    return reply($c, 200, { id => $e->{id} });
}

sub event_list {
    my ($c, $query) = @_;
    my %q = map { my ($k, $v) = split /=/, $_, 2; ($k => $v // '') }
            split /&/, $query // '';
    my $fault = faults();
    my $limit = $q{limit} || 10;
    my @all = reverse @{ events_locked(sub { $_[0]{events} }) };
    @all = grep { ($_->{delivered} ? 'true' : 'false') eq $q{delivery_success} }
           @all if defined $q{delivery_success};
    my $gte = $q{'created%5Bgte%5D'} // $q{'created[gte]'};
    @all = grep { $_->{created} >= $gte } @all if defined $gte;
    my $page = 1;
    if (my $after = $q{starting_after}) {
        my ($i) = grep { $all[$_]{id} eq $after } 0 .. $#all;
        return reply($c, 400, { error => { message => 'no such event' } })
            unless defined $i;
        @all = @all[$i + 1 .. $#all];
        $page = 2;
    }
    return reply($c, 500, { error => { message => 'injected' } })
        if $page == 2 && ($fault->{events_list} // '') eq 'http500_page2';
    my @data = @all > $limit ? @all[0 .. $limit - 1] : @all;
    my $more = @all > $limit ? 1 : 0;
    $more = 1 if ($fault->{events_list} // '') eq 'more_lie' && !$more;
    return reply($c, 200, { object => 'list', url => '/v1/events',
        has_more => $more ? JSON::PP::true : JSON::PP::false,
        data => [ map { $json->decode($_->{body}) } @data ] });
}

sub event_get {
    my ($c, $id) = @_;
    my $fault = faults();
    my ($e) = grep { $_->{id} eq $id }
              @{ events_locked(sub { $_[0]{events} }) };
    return reply($c, 404, { error => { type => 'invalid_request_error',
        message => "No such event: '$id'" } }) unless $e;
    my $mode = $fault->{event_get} // '';
    return reply($c, 500, { error => { message => 'injected' } })
        if $mode eq 'http500';
    my $body = $e->{body};
    $body =~ s/"id": "\Q$id\E"/"id": "evt_someone_else"/ if $mode eq 'other_id';
    print $c "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           . 'Content-Length: ' . length($body) . "\r\nConnection: close\r\n"
           . "\r\n$body";
    close $c;
    return;
}
