#!/usr/bin/perl
#
# The repository is the whole project: a user's plain clone has nothing
# beside it.  This makes impossible:
#   - a test, the demo, a benchmark or the build reading the design
#     folder that sat beside the developers' checkout (the vectors were
#     once read from there, and a user's "make test" failed at once)
#   - a vector file edited by hand or cut short going unnoticed: every
#     expected signature is recomputed from its secret, body and headers
#   - a vector file in use that t/vectors/README.md does not describe

use strict;
use warnings;

use File::Find qw(find);
use JSON::PP;
use Digest::SHA qw(hmac_sha256 hmac_sha256_hex);
use MIME::Base64 qw(decode_base64 encode_base64);
use Test::More;

use Mt5Credit::Sandbox;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $VECTORS = $Mt5Credit::Sandbox::VECTORS;

# --- nothing outside the tree ----------------------------------------------

# spelt in pieces, so that this file does not match itself
my $beside = join '', '..', '/', 'shared';
my $var = uc 'shared';
my @outside = (qr/\Q$beside\E/, qr/\$\($var\)|\b$var\s*[?:]?=/,
               qr/MT5CREDIT_$var/, qr{/wor[k]/});

my @files = ("$ROOT/Makefile");
find({ no_chdir => 1, wanted => sub { push @files, $_ if -f $_ } },
     "$ROOT/.ci", "$ROOT/t");

my @hits;
for my $file (@files) {
    next if $file =~ m{/t/fuzz/corpus/|/t/vectors/.*\.json$};
    open my $fh, '<:raw', $file or die "$file: $!";
    while (my $line = <$fh>) {
        for my $re (@outside) {
            push @hits, "$file:$.: $line" if $line =~ $re;
        }
    }
    close $fh;
}

ok(@files > 50, 'the Makefile, .ci/ and t/ were read (' . @files . ' files)');
is(scalar @hits, 0,
   'the Makefile, .ci/ and t/ name nothing beside the repository')
    or diag(join '', @hits);

# --- the vectors are ours, described, and intact -------------------------

my %scheme = (
    'stripe.json'                   => 'stripe',
    'standard-webhooks.json'        => 'standard',
    'checkout-com.json'             => 'hmac',
    'coinbase-commerce.json'        => 'hmac',
    'github-hub-signature-256.json' => 'hmac',
);

my $readme = do {
    open my $fh, '<', "$VECTORS/README.md" or die "$VECTORS/README.md: $!";
    local $/;
    <$fh>;
};

# the signature a verifier holding the vector's secret computes
sub recompute {
    my ($scheme, $v) = @_;

    my %h = map { lc($_) => $v->{headers}{$_} } keys %{ $v->{headers} };
    my $body = $v->{body};
    my $secret = $v->{secret};
    utf8::encode($body);
    utf8::encode($secret);

    if ($scheme eq 'stripe') {
        my $hv = $h{'stripe-signature'};
        $hv = $hv->[0] if ref $hv;
        my ($t) = ($hv // '') =~ /(?:^|,)\s*t=(\d+)/ or return undef;
        return hmac_sha256_hex("$t.$body", $secret);
    }

    if ($scheme eq 'standard') {
        my $id = $h{'webhook-id'} // $h{'svix-id'};
        my $ts = $h{'webhook-timestamp'} // $h{'svix-timestamp'};
        (my $key = $secret) =~ s/^whsec_//;
        return encode_base64(hmac_sha256("$id.$ts.$body",
                                         decode_base64($key)), '');
    }

    return hmac_sha256_hex($body, $secret);
}

my $json = JSON::PP->new->utf8;

for my $file (sort keys %scheme) {
    ok(-f "$VECTORS/$file", "t/vectors/$file is in the tree");
    like($readme, qr/`\Q$file\E`/, "README.md describes $file");

    open my $fh, '<:raw', "$VECTORS/$file" or die "$VECTORS/$file: $!";
    my $vectors = $json->decode(do { local $/; <$fh> });
    close $fh;

    my ($checked, @wrong) = (0);
    for my $v (@$vectors) {
        next unless defined $v->{computed_signature};
        my $got = recompute($scheme{$file}, $v);
        next unless defined $got;
        $checked++;
        push @wrong, $v->{name} if $got ne $v->{computed_signature};
    }

    cmp_ok($checked, '>=', 5, "$file: signatures recomputed ($checked)");
    is("@wrong", '', "$file: every expected signature is what its secret, "
                     . 'body and headers make');
}

# every vector file a test opens is one of these
for my $reader ('t/30_edge_vectors.t', 't/20_ingest.t',
                't/unit/signature_vectors_test.c')
{
    open my $fh, '<', "$ROOT/$reader" or die "$reader: $!";
    my @named = grep { !exists $scheme{$_} }
                do { local $/; <$fh> } =~ /"?'?([a-z0-9-]+\.json)\b/g;
    is("@named", '', "$reader opens only described vector files");
}

done_testing();
