/*
 * test_sigv4.c - SigV4 against AWS's published test suite (aws-sig-v4-test-suite, as shipped in
 * awslabs/aws-c-auth tests/aws-signing-test-suite/v4), the S3 documentation's examples,
 * requests signed by botocore, and the error paths: skew, expiry, missing and malformed auth.
 *
 * The vector data below is copied from the published test suite (request, canonical request,
 * signature); the botocore vectors were produced by botocore 1.43 with a fixed clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"

#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_T0     ((time_t)1440938160) /* 20150830T123600Z */
#define MISMATCH                                                                                   \
    "The request signature we calculated does not match the signature you provided. Check your "   \
    "AWS Secret Access Key and signing method. Consult the service documentation for details."

struct form {
    const char *method, *path, *query;
    struct ty_kv headers[8];
    size_t nheaders;
    const char *body;
    const char *creq; /* expected canonical request */
    const char *sig;  /* expected signature */
};

struct vector {
    const char *name;
    int normalize; /* 0: the suite's unnormalised variant (S3-style path) */
    const char *token;
    struct form header; /* signed with the Authorization header */
    struct form query;  /* presigned */
};

/* clang-format off */
static const struct vector suite[] = {
    {"get-header-key-duplicate", 1, "",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"}}, 6, "", "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value2,value2,value1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=3349ee0b81b4b589da0ff28a395c3591e04de515651dd74f298fa992d1507a97", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}}, 4, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1\nhost:example.amazonaws.com\nmy-header1:value2,value2,value1\n\nhost;my-header1\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "3349ee0b81b4b589da0ff28a395c3591e04de515651dd74f298fa992d1507a97"}},
    {"get-header-value-multiline", 1, "",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value1\n  value2\n     value3"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb65a51a73575eefd"}}, 4, "", "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1 value2 value3\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb65a51a73575eefd"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=e6f5def831211aca02987a44b96826706278c7bc078112ae0263659c5b2f2d56", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value1\n  value2\n     value3"}}, 2, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1\nhost:example.amazonaws.com\nmy-header1:value1 value2 value3\n\nhost;my-header1\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e6f5def831211aca02987a44b96826706278c7bc078112ae0263659c5b2f2d56"}},
    {"get-header-value-order", 1, "",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"}, {"My-Header1", "value2"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"}}, 7, "", "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value4,value1,value3,value2\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=313720e71ca6202fdcfa9b20f88de01a4eb0638a83c833b1c184359a4eda864e", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"}, {"My-Header1", "value2"}}, 5, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1\nhost:example.amazonaws.com\nmy-header1:value4,value1,value3,value2\n\nhost;my-header1\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "313720e71ca6202fdcfa9b20f88de01a4eb0638a83c833b1c184359a4eda864e"}},
    {"get-header-value-trim", 1, "",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;my-header2;x-amz-date, Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"}}, 5, "", "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\nx-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1%3Bmy-header2&X-Amz-Expires=3600&X-Amz-Signature=e7bb0fd515e125e1aec2ecc4c0c17484fb06f6846b927c35e46005dd3df3acd4", {{"Host", "example.amazonaws.com"}, {"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}}, 3, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1%3Bmy-header2\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n\nhost;my-header1;my-header2\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e7bb0fd515e125e1aec2ecc4c0c17484fb06f6846b927c35e46005dd3df3acd4"}},
    {"get-relative-normalized", 1, "",
     {"GET", "/example/..", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}, 3, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
     {"GET", "/example/..", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"}},
    {"get-relative-relative-normalized", 1, "",
     {"GET", "/example1/example2/../..", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}, 3, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
     {"GET", "/example1/example2/../..", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"}},
    {"get-relative-relative-unnormalized", 0, "",
     {"GET", "/example1/example2/../..", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=dc33e0856fd4baca4d7aa2146c38958283844764f38c74252a333df5e613003b"}}, 3, "", "GET\n/example1/example2/../..\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "dc33e0856fd4baca4d7aa2146c38958283844764f38c74252a333df5e613003b"},
     {"GET", "/example1/example2/../..", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=b45db0bfd1cf15003493b733e33aa208dd981bd0e63037a6ed953f71d2118a16", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/example1/example2/../..\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "b45db0bfd1cf15003493b733e33aa208dd981bd0e63037a6ed953f71d2118a16"}},
    {"get-relative-unnormalized", 0, "",
     {"GET", "/example/..", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282"}}, 3, "", "GET\n/example/..\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "eca7ead57bb5aa5c8e28007acd4ff04e1ff9a0ff3b237ec1554a184887ff9282"},
     {"GET", "/example/..", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=cbcb213b928a077e43275df47b500f1dfaa864ab3f5a18f6b95f4ff0938167ee", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/example/..\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "cbcb213b928a077e43275df47b500f1dfaa864ab3f5a18f6b95f4ff0938167ee"}},
    {"get-slash-dot-slash-normalized", 1, "",
     {"GET", "/./", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}, 3, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
     {"GET", "/./", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"}},
    {"get-slash-dot-slash-unnormalized", 0, "",
     {"GET", "/./", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df51898d8a134695145"}}, 3, "", "GET\n/./\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "68714168e6557f8f2de0ef956fc24dc2593a4bd2961f8df51898d8a134695145"},
     {"GET", "/./", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=a9b13e8f3484d9505bf1a6f347219f8f35b0fe8f128ceea597efc146a3dfe90c", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/./\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "a9b13e8f3484d9505bf1a6f347219f8f35b0fe8f128ceea597efc146a3dfe90c"}},
    {"get-slash-normalized", 1, "",
     {"GET", "//", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}, 3, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
     {"GET", "//", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"}},
    {"get-slash-pointless-dot-normalized", 1, "",
     {"GET", "/./example", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5"}}, 3, "", "GET\n/example\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5"},
     {"GET", "/./example", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=35034b1a0bdd969f346975386daf8aedfd4976573b8348cf4f67eaa41c5857de", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/example\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "35034b1a0bdd969f346975386daf8aedfd4976573b8348cf4f67eaa41c5857de"}},
    {"get-slash-pointless-dot-unnormalized", 0, "",
     {"GET", "/./example", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf07aa8b119e14cff"}}, 3, "", "GET\n/./example\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "beb03f223f7deae4146464f06e29eebbee9c8afbe15c290cf07aa8b119e14cff"},
     {"GET", "/./example", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=72b11f16d9530b18204bfb71f2d6ab085894c0ed8d352730a6e76234c58b5e10", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/./example\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "72b11f16d9530b18204bfb71f2d6ab085894c0ed8d352730a6e76234c58b5e10"}},
    {"get-slash-unnormalized", 0, "",
     {"GET", "//", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcfcb439fd5e5b76e"}}, 3, "", "GET\n//\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "c88bcd3d312d75078c0cd961d6deae3f4c754924b01669efcfcb439fd5e5b76e"},
     {"GET", "//", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=b2a9542809db687769200f56a844a03f2bd0291d6eb90232d5101c6a579446cd", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n//\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "b2a9542809db687769200f56a844a03f2bd0291d6eb90232d5101c6a579446cd"}},
    {"get-slashes-normalized", 1, "",
     {"GET", "//example//", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"}}, 3, "", "GET\n/example/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"},
     {"GET", "//example//", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=c1834e8fb0307243711f0f907f6ab7311ed300d87f13792d7ee4da89ab93e082", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/example/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "c1834e8fb0307243711f0f907f6ab7311ed300d87f13792d7ee4da89ab93e082"}},
    {"get-slashes-unnormalized", 0, "",
     {"GET", "//example//", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5"}}, 3, "", "GET\n//example//\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "87cca117541a147f6df867677d98a7d80dff226d2bfca9e4ffa899665623c7e5"},
     {"GET", "//example//", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=822a5a9ba28072c5ab2bb4a6307d0c88276d40e49fec6b724c03fb4d4ba60fc2", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n//example//\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "822a5a9ba28072c5ab2bb4a6307d0c88276d40e49fec6b724c03fb4d4ba60fc2"}},
    {"get-space-normalized", 1, "",
     {"GET", "/example space/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"}}, 3, "", "GET\n/example%20space/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"},
     {"GET", "/example space/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/example%20space/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6"}},
    {"get-space-unnormalized", 0, "",
     {"GET", "/example space/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"}}, 3, "", "GET\n/example%20space/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741"},
     {"GET", "/example space/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/example%20space/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "7a1f416954786484c9824d93c1f26ef64acb9b1b6c9154d08c9f07d0e394abf6"}},
    {"get-unreserved", 1, "",
     {"GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"}}, 3, "", "GET\n/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
     {"GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=95968482db1b9e0fadef6efc1bd24689f77c77d9ef56919c96a28cc92e0d6005", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "95968482db1b9e0fadef6efc1bd24689f77c77d9ef56919c96a28cc92e0d6005"}},
    {"get-utf8", 1, "",
     {"GET", "/\341\210\264", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"}}, 3, "", "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"},
     {"GET", "/\341\210\264", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=10eae3f14a260bd3911cc6d008d3c576d143b05b62f09782a7a4b37f52178e44", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/%E1%88%B4\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "10eae3f14a260bd3911cc6d008d3c576d143b05b62f09782a7a4b37f52178e44"}},
    {"get-vanilla-empty-query-key", 1, "",
     {"GET", "/", "Param1=value1", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"}}, 3, "", "GET\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"},
     {"GET", "/", "Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=49096700cbbaa5753443850f40df10f904fc2fdb544dc9512203cc77c471a9de", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nParam1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "49096700cbbaa5753443850f40df10f904fc2fdb544dc9512203cc77c471a9de"}},
    {"get-vanilla-query-order-encoded", 1, "",
     {"GET", "/", "Param-3=Value3&Param=Value2&%E1%88%B4=Value1", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac"}}, 3, "", "GET\n/\n%E1%88%B4=Value1&Param=Value2&Param-3=Value3\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac"},
     {"GET", "/", "Param-3=Value3&Param=Value2&%E1%88%B4=Value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=c5f1848ceec943ac2ca68ee720460c23aaae30a2300586597ada94c4a65e4787", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\n%E1%88%B4=Value1&Param=Value2&Param-3=Value3&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "c5f1848ceec943ac2ca68ee720460c23aaae30a2300586597ada94c4a65e4787"}},
    {"get-vanilla-query-order-key-case", 1, "",
     {"GET", "/", "Param2=value2&Param1=value1", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"}}, 3, "", "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
     {"GET", "/", "Param2=value2&Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6d3f923d300bed5", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nParam1=value1&Param2=value2&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "86012e2c9ad4d77369f5d81c11f75158aae4f895a085212cc6d3f923d300bed5"}},
    {"get-vanilla-query-unreserved", 1, "",
     {"GET", "/", "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"}}, 3, "", "GET\n/\n-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
     {"GET", "/", "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=8e76a88a7433637b12778d5592799b29ad21ecd6cf6325051c21d86f0acda2bf", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\n-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "8e76a88a7433637b12778d5592799b29ad21ecd6cf6325051c21d86f0acda2bf"}},
    {"get-vanilla-query", 1, "",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}, 3, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"}},
    {"get-vanilla-utf8-query", 1, "",
     {"GET", "/", "\341\210\264=bar", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"}}, 3, "", "GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
     {"GET", "/", "\341\210\264=bar&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=0bdd809b1519ac4f0c1dc3540e2cc46bd0c7f778eda408b2ebf3b913d21ff600", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\n%E1%88%B4=bar&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "0bdd809b1519ac4f0c1dc3540e2cc46bd0c7f778eda408b2ebf3b913d21ff600"}},
    {"get-vanilla-with-session-token", 1, "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Security-Token", "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"}}, 4, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\nx-amz-security-token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267\n\nhost;x-amz-date;x-amz-security-token\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Security-Token=6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267&X-Amz-Signature=7ff2b50b376cb4d151970630573d6291dc128cc5c2a12ffb237f73cc53f67b6c", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-Security-Token=6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "7ff2b50b376cb4d151970630573d6291dc128cc5c2a12ffb237f73cc53f67b6c"}},
    {"get-vanilla", 1, "",
     {"GET", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"}}, 3, "", "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
     {"GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d", {{"Host", "example.amazonaws.com"}}, 1, "", "GET\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d"}},
    {"post-header-key-case", 1, "",
     {"POST", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"}}, 3, "", "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b", {{"Host", "example.amazonaws.com"}}, 1, "", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b"}},
    {"post-header-key-sort", 1, "",
     {"POST", "/", "", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value1"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"}}, 4, "", "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=c09d07e0d55871f10f2a6d350d994acf6825a3cae70673d7def55616e6119dd7", {{"Host", "example.amazonaws.com"}, {"My-Header1", "value1"}}, 2, "", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1\nhost:example.amazonaws.com\nmy-header1:value1\n\nhost;my-header1\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "c09d07e0d55871f10f2a6d350d994acf6825a3cae70673d7def55616e6119dd7"}},
    {"post-header-value-case", 1, "",
     {"POST", "/", "", {{"Host", "example.amazonaws.com"}, {"My-Header1", "VALUE1"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;my-header1;x-amz-date, Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"}}, 4, "", "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:VALUE1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host%3Bmy-header1&X-Amz-Expires=3600&X-Amz-Signature=0698bc9e4f7f9139065ba2909c0e99da257e8e2a42492a097bcd46d792391fed", {{"Host", "example.amazonaws.com"}, {"My-Header1", "VALUE1"}}, 2, "", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host%3Bmy-header1\nhost:example.amazonaws.com\nmy-header1:VALUE1\n\nhost;my-header1\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "0698bc9e4f7f9139065ba2909c0e99da257e8e2a42492a097bcd46d792391fed"}},
    {"post-sts-header-after", 1, "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
     {"POST", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Security-Token", "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"}}, 4, "", "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Security-Token=AQoDYXdzEPT%2F%2F%2F%2F%2F%2F%2F%2F%2F%2FwEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI%2FqkPpKPi%2FkMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d%2Bxo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz%2BscqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR%2FoLxBA%3D%3D&X-Amz-Signature=2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b", {{"Host", "example.amazonaws.com"}}, 1, "", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b"}},
    {"post-sts-header-before", 1, "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
     {"POST", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Security-Token", "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"}}, 4, "", "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\nx-amz-security-token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==\n\nhost;x-amz-date;x-amz-security-token\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Security-Token=AQoDYXdzEPT%2F%2F%2F%2F%2F%2F%2F%2F%2F%2FwEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI%2FqkPpKPi%2FkMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d%2Bxo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz%2BscqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR%2FoLxBA%3D%3D&X-Amz-Signature=46c2e3c63c1dbe7d39f8ada16fe7f001c1f56c5791441565323677f96308871c", {{"Host", "example.amazonaws.com"}}, 1, "", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-Security-Token=AQoDYXdzEPT%2F%2F%2F%2F%2F%2F%2F%2F%2F%2FwEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI%2FqkPpKPi%2FkMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d%2Bxo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz%2BscqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR%2FoLxBA%3D%3D&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "46c2e3c63c1dbe7d39f8ada16fe7f001c1f56c5791441565323677f96308871c"}},
    {"post-vanilla-empty-query-value", 1, "",
     {"POST", "/", "Param1=value1", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"}}, 3, "", "POST\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
     {"POST", "/", "Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682", {{"Host", "example.amazonaws.com"}}, 1, "", "POST\n/\nParam1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682"}},
    {"post-vanilla-query", 1, "",
     {"POST", "/", "Param1=value1", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"}}, 3, "", "POST\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
     {"POST", "/", "Param1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682", {{"Host", "example.amazonaws.com"}}, 1, "", "POST\n/\nParam1=value1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "a9ef26247f293bffe40eeff86a0480ba8c14d31503b2e0c3399e3a16bf1a3682"}},
    {"post-vanilla", 1, "",
     {"POST", "/", "", {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"}}, 3, "", "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature=2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b", {{"Host", "example.amazonaws.com"}}, 1, "", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\nhost:example.amazonaws.com\n\nhost\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "2ce6e6d2e0cf2f9d1b55fafec88cd20574c31dc2e7631979f71ba2310083e95b"}},
    {"post-x-www-form-urlencoded-parameters", 1, "",
     {"POST", "/", "", {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}, {"Host", "example.amazonaws.com"}, {"Content-Length", "13"}, {"X-Amz-Date", "20150830T123600Z"}, {"x-amz-content-sha256", "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422"}}, 6, "Param1=value1", "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded; charset=utf-8\nhost:example.amazonaws.com\nx-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\nx-amz-date:20150830T123600Z\n\ncontent-length;content-type;host;x-amz-content-sha256;x-amz-date\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e", "328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost&X-Amz-Expires=3600&X-Amz-Signature=0dbeb9b026c7b6675f266b8427efec9b4fa8b1f6ef1477d717aea231106eab4d", {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}, {"Host", "example.amazonaws.com"}, {"Content-Length", "13"}}, 3, "Param1=value1", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded; charset=utf-8\nhost:example.amazonaws.com\n\ncontent-length;content-type;host\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e", "0dbeb9b026c7b6675f266b8427efec9b4fa8b1f6ef1477d717aea231106eab4d"}},
    {"post-x-www-form-urlencoded", 1, "",
     {"POST", "/", "", {{"Content-Type", "application/x-www-form-urlencoded"}, {"Host", "example.amazonaws.com"}, {"Content-Length", "13"}, {"X-Amz-Date", "20150830T123600Z"}, {"x-amz-content-sha256", "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"}, {"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"}}, 6, "Param1=value1", "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\nx-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\nx-amz-date:20150830T123600Z\n\ncontent-length;content-type;host;x-amz-content-sha256;x-amz-date\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e", "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"},
     {"POST", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost&X-Amz-Expires=3600&X-Amz-Signature=89a40deed0f26f9461242825a082d2222717248abc7ab41f552ad84a94ad46e9", {{"Content-Type", "application/x-www-form-urlencoded"}, {"Host", "example.amazonaws.com"}, {"Content-Length", "13"}}, 3, "Param1=value1", "POST\n/\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n\ncontent-length;content-type;host\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e", "89a40deed0f26f9461242825a082d2222717248abc7ab41f552ad84a94ad46e9"}},
};
/* clang-format on */

#define NSUITE (sizeof(suite) / sizeof(suite[0]))

static struct sigv4_request form_request(const struct form *f)
{
    struct sigv4_request r;
    memset(&r, 0, sizeof(r));
    r.method = f->method;
    r.path = f->path;
    r.query = f->query;
    r.headers = f->headers;
    r.nheaders = f->nheaders;
    r.body = f->body;
    r.body_len = strlen(f->body);
    return r;
}

/* Token added after signing: the suite's "omit_session_token" case, not a SigV4 request. */
static int token_after_signing(const struct vector *v)
{
    return strcmp(v->name, "post-sts-header-after") == 0;
}

static void test_suite_header_form(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSUITE; i++) {
        const struct vector *v = &suite[i];
        struct sigv4_request r = form_request(&v->header);
        struct sigv4_auth a;
        struct ty_err err;
        struct ty_buf cr;

        ty_err_clear(&err);
        print_message("header form: %s\n", v->name);
        assert_int_equal(sigv4_parse(&r, &a, &err), 0);
        assert_string_equal(a.access_key, "AKIDEXAMPLE");
        assert_string_equal(a.date, "20150830");
        assert_string_equal(a.region, "us-east-1");
        assert_string_equal(a.service, "service");
        assert_string_equal(a.amz_date, "20150830T123600Z");
        assert_string_equal(a.signature, v->header.sig);
        assert_int_equal(a.presigned, 0);
        assert_int_equal(a.expires, 0);
        if (strstr(a.signed_headers, "x-amz-security-token"))
            assert_string_equal(a.session_token, v->token);
        if (!v->normalize)
            snprintf(a.service, sizeof(a.service), "s3"); /* S3 does not normalise */
        ty_buf_init(&cr, 1 << 20);
        assert_int_equal(sigv4_canonical_request(&r, &a, &cr, &err), 0);
        assert_string_equal(cr.data, v->header.creq);
        ty_buf_cleanup(&cr);
        if (v->normalize) {
            assert_int_equal(sigv4_verify(&r, &a, SUITE_SECRET, SUITE_T0, &err), 0);
            assert_int_equal(sigv4_verify(&r, &a, "wrong-secret", SUITE_T0, &err), -TY_EBADSIG);
            assert_string_equal(err.msg, MISMATCH);
        }
    }
}

static void test_suite_sign(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSUITE; i++) {
        const struct vector *v = &suite[i];
        struct ty_kv signed_only[8];
        struct sigv4_request r = form_request(&v->header);
        struct sigv4_auth a;
        const char *authz = NULL;
        char out[2048];
        size_t n = 0;

        if (!v->normalize)
            continue;
        print_message("sign: %s\n", v->name);
        assert_int_equal(sigv4_parse(&r, &a, NULL), 0);
        for (size_t k = 0; k < v->header.nheaders; k++) {
            char lname[64];
            size_t j;
            const char *name = v->header.headers[k].name;
            if (strcmp(name, "Authorization") == 0) {
                authz = v->header.headers[k].value;
                continue;
            }
            for (j = 0; name[j] && j < sizeof(lname) - 1; j++)
                lname[j] = (char)(name[j] >= 'A' && name[j] <= 'Z' ? name[j] + 32 : name[j]);
            lname[j] = '\0';
            if (strstr(a.signed_headers, lname))
                signed_only[n++] = v->header.headers[k];
        }
        r.headers = signed_only;
        r.nheaders = n;
        assert_non_null(authz);
        assert_int_equal(sigv4_sign(&r, "AKIDEXAMPLE", SUITE_SECRET, "us-east-1", "service",
                                    "20150830T123600Z", out, sizeof(out)),
                         0);
        assert_string_equal(out, authz);
    }
}

static void test_suite_presigned(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSUITE; i++) {
        const struct vector *v = &suite[i];
        struct sigv4_request r = form_request(&v->query);
        struct sigv4_auth a;
        struct ty_err err;
        struct ty_buf cr;

        print_message("presigned: %s\n", v->name);
        assert_int_equal(sigv4_parse(&r, &a, &err), 0);
        assert_int_equal(a.presigned, 1);
        assert_int_equal(a.expires, 3600);
        assert_string_equal(a.signature, v->query.sig);
        assert_string_equal(a.amz_date, "20150830T123600Z");
        if (!v->normalize)
            continue;
        if (token_after_signing(v)) {
            /* the token was appended to the query after signing: it is not verifiable */
            assert_int_equal(sigv4_verify(&r, &a, SUITE_SECRET, SUITE_T0, &err), -TY_EBADSIG);
            continue;
        }
        assert_string_equal(a.session_token, v->token);
        ty_buf_init(&cr, 1 << 20);
        assert_int_equal(sigv4_canonical_request(&r, &a, &cr, &err), 0);
        assert_string_equal(cr.data, v->query.creq);
        ty_buf_cleanup(&cr);
        assert_int_equal(sigv4_verify(&r, &a, SUITE_SECRET, SUITE_T0, &err), 0);
        assert_int_equal(sigv4_verify(&r, &a, SUITE_SECRET, SUITE_T0 + 3600, &err), 0);
        assert_int_equal(sigv4_verify(&r, &a, SUITE_SECRET, SUITE_T0 + 3601, &err), -TY_EBADSIG);
        assert_string_equal(err.msg, "Request has expired");
    }
}

/* sigv4_presign reproduces the suite's presigned signatures from the unsigned request. */
static void test_suite_presign(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSUITE; i++) {
        const struct vector *v = &suite[i];
        struct sigv4_request r = form_request(&v->query);
        struct sigv4_request back;
        struct sigv4_auth a;
        char out[4096];
        const char *sig;

        if (!v->normalize || token_after_signing(v))
            continue;
        print_message("presign: %s\n", v->name);
        r.query = v->header.query; /* the request's own query, before signing */
        assert_int_equal(sigv4_presign(&r, "AKIDEXAMPLE", SUITE_SECRET,
                                       v->token[0] ? v->token : NULL, "us-east-1", "service",
                                       "20150830T123600Z", 3600, out, sizeof(out)),
                         0);
        sig = strstr(out, "X-Amz-Signature=");
        assert_non_null(sig);
        assert_string_equal(sig + 16, v->query.sig);
        back = r;
        back.query = out;
        assert_int_equal(sigv4_parse(&back, &a, NULL), 0);
        assert_int_equal(sigv4_verify(&back, &a, SUITE_SECRET, SUITE_T0 + 10, NULL), 0);
    }
}

/* ---- S3 documentation examples (AKIAIOSFODNN7EXAMPLE, examplebucket) --------------------- */

#define S3DOC_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3DOC_T0     ((time_t)1369353600) /* 20130524T000000Z */

static void test_s3_doc_presigned(void **state)
{
    struct ty_kv h[] = {{"Host", "examplebucket.s3.amazonaws.com"}};
    struct sigv4_request r = {
        "GET",
        "/test.txt",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-"
        "east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-"
        "SignedHeaders=host&X-Amz-Signature="
        "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
        h,
        1,
        NULL,
        0};
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_string_equal(a.access_key, "AKIAIOSFODNN7EXAMPLE");
    assert_string_equal(a.service, "s3");
    assert_int_equal(a.expires, 86400);
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0 + 60, &err), 0);
    /* a body does not matter: presigned S3 requests are UNSIGNED-PAYLOAD */
    r.body = "anything";
    r.body_len = 8;
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0 + 86400, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0 + 86401, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, "Request has expired");
    r.path = "/test2.txt";
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0 + 60, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, MISMATCH);
}

static void test_s3_doc_header_get(void **state)
{
    struct ty_kv h[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"Range", "bytes=0-9"},
        {"x-amz-content-sha256",
         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"x-amz-date", "20130524T000000Z"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature="
         "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"}};
    struct sigv4_request r = {"GET", "/test.txt", "", h, 5, NULL, 0};
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0, &err), 0);
    h[1].value = "bytes=0-99";
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0, &err), -TY_EBADSIG);
}

static void test_s3_doc_header_put(void **state)
{
    static const char body[] = "Welcome to Amazon S3.";
    struct ty_kv h[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
        {"x-amz-date", "20130524T000000Z"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"x-amz-content-sha256",
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature="
         "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"}};
    struct sigv4_request r = {"PUT", "/test%24file.text", "", h, 6, body, sizeof(body) - 1};
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0, &err), 0);
    /* the signed content hash must match the body actually sent */
    r.body = "Welcome to Amazon S4.";
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0, &err), -TY_EBADSIG);
    assert_string_equal(err.field, "x-amz-content-sha256");
    /* without the body at hand (streamed later) the header is trusted as signed */
    r.body = NULL;
    r.body_len = 0;
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0, &err), 0);
}

/* ---- requests signed by botocore (fixed clock 20261202T103000Z) ---------------------------- */

#define BOTO_AKID   "AKIDTRAINYARD0000001"
#define BOTO_SECRET "trainyardSecretKey/ExampleOnly+0123456789"
#define BOTO_T0     ((time_t)1796207400) /* 20261202T103000Z */

/* POST / with JSON 1.1, as boto3's SageMaker client sends it (User-Agent is not signed). */
static void test_boto3_sagemaker(void **state)
{
    static const char body[] = "{\"MaxResults\": 10}";
    struct ty_kv h[] = {
        {"Host", "localhost:8080"},
        {"Accept-Encoding", "identity"},
        {"Content-Type", "application/x-amz-json-1.1"},
        {"X-Amz-Target", "SageMaker.ListTrainingJobs"},
        {"User-Agent", "Boto3/1.26.27 Python/3.11.2"},
        {"X-Amz-Date", "20261202T103000Z"},
        {"Content-Length", "18"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIDTRAINYARD0000001/20261202/us-east-1/sagemaker/"
         "aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
         "Signature=e024b197b11c58e2e37c5cce85e46eca8eff44fea5df3de183708217857f2706"}};
    struct sigv4_request r = {"POST", "/", "", h, 8, body, sizeof(body) - 1};
    struct sigv4_auth a;
    struct ty_err err;
    char out[1024];
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_string_equal(a.access_key, BOTO_AKID);
    assert_string_equal(a.service, "sagemaker");
    assert_string_equal(a.signed_headers, "content-type;host;x-amz-date;x-amz-target");
    assert_string_equal(a.session_token, "");
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0, &err), 0);
    /* unsigned headers may change; signed ones and the body may not */
    h[4].value = "curl/8.0";
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0 + 899, &err), 0);
    h[3].value = "SageMaker.DeleteTrainingJob";
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, MISMATCH);
    h[3].value = "SageMaker.ListTrainingJobs";
    r.body = "{\"MaxResults\": 11}";
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0, &err), -TY_EBADSIG);
    r.body = body;
    /* sigv4_sign gives the same header for the signed subset */
    {
        struct ty_kv s[] = {h[0], h[2], h[3], h[5]};
        struct sigv4_request rs = {"POST", "/", "", s, 4, body, sizeof(body) - 1};
        assert_int_equal(sigv4_sign(&rs, BOTO_AKID, BOTO_SECRET, "us-east-1", "sagemaker",
                                    "20261202T103000Z", out, sizeof(out)),
                         0);
        assert_string_equal(out, h[7].value);
    }
}

/* S3 presigned GET of a key that needs encoding: the path is used as sent, not re-encoded. */
static void test_boto3_s3_presigned_key(void **state)
{
    struct ty_kv h[] = {{"host", "localhost:8080"}, {"user-agent", "curl/8"}};
    struct sigv4_request r = {
        "GET",
        "/trainyard-data/my%20dir/%D0%BA%D0%BB%D1%8E%2B%D1%87~%281%29.txt",
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDTRAINYARD0000001%2F20261202%2Fus-"
        "east-1%2Fs3%2Faws4_request&X-Amz-Date=20261202T103000Z&X-Amz-Expires=900&X-Amz-"
        "SignedHeaders=host&X-Amz-Signature="
        "03dd2b21b73ba02b75844ed43a61e6dd356ba91a39d7d7f547e5091924fa24a8",
        h,
        2,
        NULL,
        0};
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0 + 900, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0 + 901, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, "Request has expired");
}

/* S3 PUT with a signed payload hash, header form. */
static void test_boto3_s3_put(void **state)
{
    static const char body[] = "hello trainyard\n";
    struct ty_kv h[] = {
        {"Host", "localhost:8080"},
        {"X-Amz-Date", "20261202T103000Z"},
        {"X-Amz-Content-SHA256",
         "150f9737383cda74325b5da14995e3d0414fa358dcae827d0967a7d98141c9db"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIDTRAINYARD0000001/20261202/us-east-1/s3/aws4_request, "
         "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
         "Signature=8e880cc500f22374d4529827bd8fe58bc9b2f3f4a987639c59b858356e99f64d"}};
    struct sigv4_request r = {"PUT",
                              "/trainyard-data/my%20dir/%D0%BA%D0%BB%D1%8E%2B%D1%87~%281%29.txt",
                              NULL,
                              h,
                              4,
                              body,
                              sizeof(body) - 1};
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0, &err), 0);
}

/* botocore with a caller-supplied Date header and no X-Amz-Date ("-0000" zone). */
static void test_boto3_s3_date_header(void **state)
{
    static const char body[] = "Welcome to Amazon S3.";
    struct ty_kv h[] = {
        {"Host", "examplebucket.s3.amazonaws.com"},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"Date", "Fri, 24 May 2013 00:00:00 -0000"},
        {"X-Amz-Content-SHA256",
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
         "SignedHeaders=date;host;x-amz-content-sha256;x-amz-storage-class, "
         "Signature=537a8c565f27da249b46cd0a32fad1134b73cc392327172d2b3958c4d26c34ca"}};
    struct sigv4_request r = {"PUT", "/test%24file.text", "", h, 5, body, sizeof(body) - 1};
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_string_equal(a.amz_date, "20130524T000000Z");
    assert_int_equal(sigv4_verify(&r, &a, S3DOC_SECRET, S3DOC_T0, &err), 0);
}

/* STS GetCallerIdentity presigned with a session token (non-S3: the empty body's hash). */
static void test_boto3_sts_presigned_token(void **state)
{
    struct ty_kv h[] = {{"Host", "localhost:8080"}};
    struct sigv4_request r = {
        "GET",
        "/",
        "Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-"
        "Credential=ASIATRAINYARD0000002%2F20261202%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date="
        "20261202T103000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok%"
        "2Fen%2Bwith%3Dchars&X-Amz-Signature="
        "225b51ced368b2c3ff9136d460606547990d612e2bc929728e80ee472d6c79a4",
        h,
        1,
        NULL,
        0};
    struct sigv4_auth a;
    struct ty_err err;
    char out[2048];
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_string_equal(a.access_key, "ASIATRAINYARD0000002");
    assert_string_equal(a.session_token, "tok/en+with=chars");
    assert_int_equal(a.expires, 60);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0 + 60, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0 + 61, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, "Request has expired");
    /* a presigned URL from the future is refused beyond the skew */
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0 - 901, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, "Signature not yet current: 20261202T103000Z is still later than "
                                 "20261202T102959Z (20261202T101459Z + 15 min.)");
    /* sigv4_presign produces the same URL */
    r.query = "Action=GetCallerIdentity&Version=2011-06-15";
    assert_int_equal(sigv4_presign(&r, "ASIATRAINYARD0000002", BOTO_SECRET, "tok/en+with=chars",
                                   "us-east-1", "sts", "20261202T103000Z", 60, out, sizeof(out)),
                     0);
    assert_string_equal(strstr(out, "X-Amz-Signature=") + 16,
                        "225b51ced368b2c3ff9136d460606547990d612e2bc929728e80ee472d6c79a4");
}

/* ---- time ------------------------------------------------------------------------------------ */

/* A request signed with sigv4_sign at amz_date; fills h (3 headers + Authorization). */
static struct sigv4_request signed_request(struct ty_kv *h, char *authz, size_t n,
                                           const char *amz_date)
{
    struct sigv4_request r = {"POST", "/", "", h, 3, "{}", 2};
    h[0].name = "Host";
    h[0].value = "localhost:8080";
    h[1].name = "X-Amz-Date";
    h[1].value = amz_date;
    h[2].name = "X-Amz-Target";
    h[2].value = "SageMaker.ListTrainingJobs";
    assert_int_equal(
        sigv4_sign(&r, BOTO_AKID, BOTO_SECRET, "us-east-1", "sagemaker", amz_date, authz, n), 0);
    h[3].name = "Authorization";
    h[3].value = authz;
    r.nheaders = 4;
    return r;
}

static void test_skew(void **state)
{
    struct ty_kv h[4];
    char authz[512];
    struct sigv4_request r = signed_request(h, authz, sizeof(authz), "20261202T100000Z");
    const time_t t = (time_t)1796205600; /* 20261202T100000Z */
    struct sigv4_auth a;
    struct ty_err err;
    (void)state;

    assert_int_equal(sigv4_parse(&r, &a, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, t, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, t + 900, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, t - 900, &err), 0);
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, t + 1800, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, "Signature expired: 20261202T100000Z is now earlier than "
                                 "20261202T101500Z (20261202T103000Z - 15 min.)");
    assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, t - 901, &err), -TY_EBADSIG);
    assert_string_equal(err.msg, "Signature not yet current: 20261202T100000Z is still later than "
                                 "20261202T095959Z (20261202T094459Z + 15 min.)");
}

/* ---- missing and malformed ------------------------------------------------------------------ */

struct bad {
    const char *authz; /* NULL: no Authorization header */
    const char *xdate; /* NULL: no X-Amz-Date header */
    const char *query;
    int code;
    const char *msg; /* exact message, or NULL */
};

#define GOOD_CRED "Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"
#define GOOD_SIG  "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
#define SIGV4     "AWS4-HMAC-SHA256 "

static const struct bad bads[] = {
    {NULL, NULL, NULL, TY_ENOAUTH, "Missing Authentication Token"},
    {NULL, "20150830T123600Z", "", TY_ENOAUTH, "Missing Authentication Token"},
    {NULL, NULL, "Action=ListUsers&Version=2010-05-08", TY_ENOAUTH, "Missing Authentication Token"},
    {"Bearer abc.def", "20150830T123600Z", NULL, TY_EINVAL,
     "Authorization header requires 'Credential' parameter. Authorization header requires "
     "'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. "
     "Authorization=Bearer abc.def"},
    {"AWS AKIDEXAMPLE:qaNdqGsI6bq4Hi+9Gzovwyjbh0E=", NULL, NULL, TY_EINVAL,
     "Authorization header requires 'Credential' parameter. Authorization header requires "
     "'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. "
     "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. "
     "Authorization=AWS AKIDEXAMPLE:qaNdqGsI6bq4Hi+9Gzovwyjbh0E="},
    {SIGV4 GOOD_CRED, "20150830T123600Z", NULL, TY_EINVAL,
     "Authorization header requires 'Signature' parameter. Authorization header requires "
     "'SignedHeaders' parameter. Authorization=" SIGV4 GOOD_CRED},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, " GOOD_SIG, NULL, NULL, TY_EINVAL,
     "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. "
     "Authorization=" SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, " GOOD_SIG},
    {SIGV4 "Credential= AKIDEXAMPLE /20150830/us-east-1/service/aws4_request, SignedHeaders=host, "
           "Signature",
     "20150830T123600Z", NULL, TY_EINVAL,
     "'Signature' not a valid key=value pair (missing equal-sign) in Authorization header: '" SIGV4
     "Credential= AKIDEXAMPLE /20150830/us-east-1/service/aws4_request, SignedHeaders=host, "
     "Signature'."},
    {SIGV4 "Credential=AKIDEXAMPLE/20150830/us-east-1/aws4_request, "
           "SignedHeaders=host;x-amz-date, " GOOD_SIG,
     "20150830T123600Z", NULL, TY_EINVAL,
     "Authorization header is malformed; the Credential is mal-formed; expecting "
     "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"."},
    {SIGV4 "Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws5_request, "
           "SignedHeaders=host;x-amz-date, " GOOD_SIG,
     "20150830T123600Z", NULL, TY_EINVAL,
     "Credential should be scoped with a valid terminator: 'aws4_request', not 'aws5_request'."},
    {SIGV4 "Credential=AKIDEXAMPLE/2015083/us-east-1/service/aws4_request, "
           "SignedHeaders=host;x-amz-date, " GOOD_SIG,
     "20150830T123600Z", NULL, TY_EINVAL, NULL},
    {SIGV4 "Credential=AKIDEXAMPLE/20150830//service/aws4_request, "
           "SignedHeaders=host;x-amz-date, " GOOD_SIG,
     "20150830T123600Z", NULL, TY_EINVAL, "Credential should be scoped to a valid region. "},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, " GOOD_SIG, "2015-08-30T12:36:00Z", NULL,
     TY_EINVAL,
     "Date must be in ISO-8601 'basic format'. Got '2015-08-30T12:36:00Z'. See "
     "http://en.wikipedia.org/wiki/ISO_8601"},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, " GOOD_SIG, "20151330T123600Z", NULL,
     TY_EINVAL, NULL},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, " GOOD_SIG, "20150831T000000Z", NULL,
     TY_EBADSIG,
     "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
     "'20150830' != '20150831', from '20150831T000000Z'."},
    {SIGV4 GOOD_CRED ", SignedHeaders=x-amz-date, " GOOD_SIG, "20150830T123600Z", NULL, TY_EINVAL,
     "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;;x-amz-date, " GOOD_SIG, "20150830T123600Z", NULL,
     TY_EINVAL, NULL},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, Signature=5fa00fa3", "20150830T123600Z",
     NULL, TY_EBADSIG, MISMATCH},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, "
                     "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31f",
     "20150830T123600Z", NULL, TY_EBADSIG, MISMATCH},
    {SIGV4 GOOD_CRED ", SignedHeaders=host;x-amz-date, "
                     "Signature=zfa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
     "20150830T123600Z", NULL, TY_EBADSIG, MISMATCH},
    /* presigned */
    {NULL, NULL, "X-Amz-Signature=abc", TY_EINVAL,
     "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, "
     "X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."},
    {NULL, NULL,
     "X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%"
     "2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-"
     "Expires=3600&X-Amz-Signature="
     "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
     TY_EINVAL, "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\""},
    {NULL, NULL,
     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%"
     "2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-"
     "Expires=604801&X-Amz-Signature="
     "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
     TY_EINVAL, "X-Amz-Expires must be less than a week (in seconds) that is 604800"},
    {NULL, NULL,
     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%"
     "2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-"
     "Expires=-5&X-Amz-Signature="
     "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
     TY_EINVAL, "X-Amz-Expires must be non-negative"},
    {NULL, NULL,
     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%"
     "2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-"
     "Expires=-99999999999999999999&X-Amz-Signature="
     "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
     TY_EINVAL, "X-Amz-Expires must be non-negative"},
    {NULL, NULL,
     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1%"
     "2Fservice%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-"
     "Expires=1h&X-Amz-Signature="
     "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
     TY_EINVAL, "X-Amz-Expires should be a number"},
    {NULL, NULL,
     "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fus-east-1&X-Amz-"
     "Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&X-Amz-Signature="
     "e93c787ed7f371d5c6b165c1b38ede9550f4dce4144713e844b25b7192d3865d",
     TY_EINVAL,
     "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "
     "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"."},
};

static void test_missing_and_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
        const struct bad *b = &bads[i];
        struct ty_kv h[3];
        struct sigv4_request r = {"GET", "/", b->query, h, 0, NULL, 0};
        struct sigv4_auth a;
        struct ty_err err;

        h[r.nheaders].name = "Host";
        h[r.nheaders++].value = "example.amazonaws.com";
        if (b->xdate) {
            h[r.nheaders].name = "X-Amz-Date";
            h[r.nheaders++].value = b->xdate;
        }
        if (b->authz) {
            h[r.nheaders].name = "Authorization";
            h[r.nheaders++].value = b->authz;
        }
        ty_err_clear(&err);
        memset(&a, 0x5a, sizeof(a));
        print_message("bad[%zu]\n", i);
        assert_int_equal(sigv4_parse(&r, &a, &err), -b->code);
        assert_int_equal(err.code, b->code);
        if (b->msg)
            assert_string_equal(err.msg, b->msg);
        assert_int_equal((unsigned char)a.access_key[0], 0x5a); /* OUT untouched on error */
    }
}

static void test_sign_errors(void **state)
{
    struct ty_kv h[] = {{"Host", "h"}, {"X-Amz-Date", "20150830T123600Z"}};
    struct sigv4_request r = {"GET", "/", "", h, 2, NULL, 0};
    char out[512], tiny[16];
    (void)state;

    assert_int_equal(
        sigv4_sign(&r, "AK", "SK", "us-east-1", "service", "20150830T123600Z", out, sizeof(out)),
        0);
    assert_int_equal(
        sigv4_sign(&r, "AK", "SK", "us-east-1", "service", "20150830T123600Z", tiny, sizeof(tiny)),
        -TY_EINVAL);
    assert_string_equal(tiny, "");
    assert_int_equal(
        sigv4_sign(&r, "AK", "SK", "us-east-1", "service", "2015-08-30", out, sizeof(out)),
        -TY_EINVAL);
    assert_int_equal(
        sigv4_sign(&r, "A/K", "SK", "us-east-1", "service", "20150830T123600Z", out, sizeof(out)),
        -TY_EINVAL);
    assert_int_equal(
        sigv4_sign(NULL, "AK", "SK", "us-east-1", "service", "20150830T123600Z", out, sizeof(out)),
        -TY_EINVAL);
    r.nheaders = 1; /* no x-amz-date */
    assert_int_equal(
        sigv4_sign(&r, "AK", "SK", "us-east-1", "service", "20150830T123600Z", out, sizeof(out)),
        -TY_EINVAL);
    h[0].name = "Accept"; /* no host */
    r.nheaders = 2;
    assert_int_equal(
        sigv4_sign(&r, "AK", "SK", "us-east-1", "service", "20150830T123600Z", out, sizeof(out)),
        -TY_EINVAL);
    assert_int_equal(sigv4_presign(&r, "AK", "SK", NULL, "us-east-1", "service", "20150830T123600Z",
                                   3600, out, sizeof(out)),
                     -TY_EINVAL);
    h[0].name = "Host";
    assert_int_equal(sigv4_presign(&r, "AK", "SK", NULL, "us-east-1", "service", "20150830T123600Z",
                                   604801, out, sizeof(out)),
                     -TY_EINVAL);
}

/* Payload hash variants: literal UNSIGNED-PAYLOAD / STREAMING-* and the x-amz-content-sha256. */
static void test_payload_hash_literal(void **state)
{
    static const char *const values[] = {"UNSIGNED-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                                         "STREAMING-UNSIGNED-PAYLOAD-TRAILER"};
    (void)state;
    for (size_t i = 0; i < 3; i++) {
        struct ty_kv h[4] = {{"Host", "localhost:8080"},
                             {"X-Amz-Date", "20261202T103000Z"},
                             {"x-amz-content-sha256", values[i]}};
        struct sigv4_request r = {"PUT", "/bucket/key", "", h, 3, "chunked body", 12};
        struct sigv4_auth a;
        struct ty_buf cr;
        char authz[512];
        const char *nl;

        assert_int_equal(sigv4_sign(&r, BOTO_AKID, BOTO_SECRET, "us-east-1", "s3",
                                    "20261202T103000Z", authz, sizeof(authz)),
                         0);
        h[3].name = "Authorization";
        h[3].value = authz;
        r.nheaders = 4;
        assert_int_equal(sigv4_parse(&r, &a, NULL), 0);
        ty_buf_init(&cr, 1 << 16);
        assert_int_equal(sigv4_canonical_request(&r, &a, &cr, NULL), 0);
        nl = strrchr(cr.data, '\n');
        assert_non_null(nl);
        assert_string_equal(nl + 1, values[i]);
        ty_buf_cleanup(&cr);
        assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0, NULL), 0);
    }
}

/* Encoding rules: double encoding outside S3, query decoding and sorting, '+' kept literal. */
static void test_canonical_encoding(void **state)
{
    struct ty_kv h[] = {{"Host", "h"}};
    struct sigv4_request r = {
        "GET", "/a%20b/./c//d/../e+f", "b=2&a=%7e&a=1&c&A=x%2fy+z", h, 1, NULL, 0};
    struct sigv4_auth a;
    struct ty_buf cr;
    (void)state;

    memset(&a, 0, sizeof(a));
    snprintf(a.service, sizeof(a.service), "sagemaker");
    snprintf(a.signed_headers, sizeof(a.signed_headers), "host");
    ty_buf_init(&cr, 1 << 16);
    assert_int_equal(sigv4_canonical_request(&r, &a, &cr, NULL), 0);
    assert_string_equal(cr.data,
                        "GET\n/a%2520b/c/e%2Bf\nA=x%2Fy%2Bz&a=1&a=~&b=2&c=\nhost:h\n\n"
                        "host\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    snprintf(a.service, sizeof(a.service), "s3");
    assert_int_equal(sigv4_canonical_request(&r, &a, &cr, NULL), 0);
    assert_string_equal(cr.data,
                        "GET\n/a%20b/./c//d/../e%2Bf\nA=x%2Fy%2Bz&a=1&a=~&b=2&c=\nhost:h\n\n"
                        "host\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    ty_buf_cleanup(&cr);
}

/* Hostile input: huge, truncated, binary; nothing may crash or read out of bounds. */
static void test_hostile_input(void **state)
{
    static const char *const authz[] = {
        "",
        "AWS4-HMAC-SHA256",
        "AWS4-HMAC-SHA256 ",
        "AWS4-HMAC-SHA256 ,,,,",
        "AWS4-HMAC-SHA256 Credential=,SignedHeaders=,Signature=",
        "AWS4-HMAC-SHA256 Credential=////,SignedHeaders=;,Signature=x",
        "AWS4-HMAC-SHA256 Credential=a/b/c/d/e/f/g,SignedHeaders=host,Signature=1",
        "AWS4-HMAC-SHA256 =,=,=",
        ("AWS4-HMAC-SHA256\tCredential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request,"
         "SignedHeaders=host,Signature="
         "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    };
    static const char *const queries[] = {
        "%",
        "%%%",
        "&&&&",
        "=",
        "X-Amz-Algorithm",
        "X-Amz-Algorithm=%zz&X-Amz-Credential=%",
        ("X-Amz-Credential=%00&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20150830T123600Z&"
         "X-Amz-SignedHeaders=host&X-Amz-Expires=1&X-Amz-Signature=00"),
    };
    char *big = malloc(200000);
    (void)state;

    assert_non_null(big);
    for (size_t i = 0; i < sizeof(authz) / sizeof(authz[0]); i++) {
        struct ty_kv h[] = {
            {"Host", "h"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", authz[i]}};
        struct sigv4_request r = {"GET", "/", "", h, 3, NULL, 0};
        struct sigv4_auth a;
        struct ty_err err;
        int rc = sigv4_parse(&r, &a, &err);
        if (rc == 0)
            assert_int_equal(sigv4_verify(&r, &a, "x", SUITE_T0, &err), -TY_EBADSIG);
        else
            assert_true(err.msg[0] != '\0');
    }
    for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
        struct ty_kv h[] = {{"Host", "h"}};
        struct sigv4_request r = {"GET", "/", queries[i], h, 1, NULL, 0};
        struct sigv4_auth a;
        struct ty_err err;
        assert_true(sigv4_parse(&r, &a, &err) < 0);
    }
    /* a 200 KB Authorization header and query */
    memset(big, 'A', 199999);
    big[199999] = '\0';
    memcpy(big, "AWS4-HMAC-SHA256 Credential=", 28);
    {
        struct ty_kv h[] = {
            {"Host", "h"}, {"X-Amz-Date", "20150830T123600Z"}, {"Authorization", big}};
        struct sigv4_request r = {"GET", "/", big, h, 3, NULL, 0};
        struct sigv4_auth a;
        struct ty_err err;
        assert_true(sigv4_parse(&r, &a, &err) < 0);
        r.nheaders = 2;
        assert_true(sigv4_parse(&r, &a, &err) < 0);
    }
    /* a canonical request over the ceiling is refused, not truncated */
    {
        struct ty_kv h[] = {{"Host", big}, {"X-Amz-Date", "20150830T123600Z"}};
        struct sigv4_request r = {"GET", "/", "", h, 2, NULL, 0};
        char out[512];
        big[0] = 'h';
        memset(big, 'h', 199999);
        assert_int_equal(sigv4_sign(&r, "AK", "SK", "r", "s", "20150830T123600Z", out, sizeof(out)),
                         0);
        {
            struct ty_kv h2[] = {{"Host", big}, {"Host", big}, {"X-Amz-Date", "x"}};
            struct sigv4_request r2 = {"GET", "/", "", h2, 3, NULL, 0};
            assert_int_equal(
                sigv4_sign(&r2, "AK", "SK", "r", "s", "20150830T123600Z", out, sizeof(out)),
                -TY_EINVAL);
        }
    }
    free(big);
}

/* sigv4_verify_key: the cached signing key is used for its scope, re-derived for another. */
static void test_key_cache(void **state)
{
    static const char body[] = "{}";
    struct ty_kv h[] = {{"Host", "localhost:8080"},
                        {"X-Amz-Date", "20261202T103000Z"},
                        {"X-Amz-Target", "SageMaker.DescribeTrainingJob"},
                        {"Authorization", NULL}};
    struct sigv4_request r = {"POST", "/", "", h, 3, body, sizeof(body) - 1};
    static const char *const regions[] = {"us-east-1", "eu-west-1", "us-east-1"};
    struct sigv4_key kc;
    char out[1024];
    (void)state;

    memset(&kc, 0, sizeof(kc));
    for (size_t i = 0; i < 3; i++) {
        struct sigv4_auth a;
        struct ty_err err;
        r.nheaders = 3;
        assert_int_equal(sigv4_sign(&r, BOTO_AKID, BOTO_SECRET, regions[i], "sagemaker",
                                    "20261202T103000Z", out, sizeof(out)),
                         0);
        h[3].value = out;
        r.nheaders = 4;
        assert_int_equal(sigv4_parse(&r, &a, &err), 0);
        assert_int_equal(sigv4_verify_key(&r, &a, BOTO_SECRET, &kc, BOTO_T0, &err), 0);
        assert_string_equal(kc.region, regions[i]);
        assert_string_equal(kc.date, "20261202");
        assert_string_equal(kc.service, "sagemaker");
        /* the second call takes the key from kc: a damaged one is noticed */
        assert_int_equal(sigv4_verify_key(&r, &a, BOTO_SECRET, &kc, BOTO_T0, &err), 0);
        kc.key[0] ^= 1;
        assert_int_equal(sigv4_verify_key(&r, &a, BOTO_SECRET, &kc, BOTO_T0, &err), -TY_EBADSIG);
        assert_string_equal(err.msg, MISMATCH);
        kc.key[0] ^= 1;
        /* the other checks stay: a wrong body, a stale date */
        r.body = "{ }";
        assert_int_equal(sigv4_verify_key(&r, &a, BOTO_SECRET, &kc, BOTO_T0, &err), -TY_EBADSIG);
        r.body = body;
        assert_int_equal(sigv4_verify_key(&r, &a, BOTO_SECRET, &kc, BOTO_T0 + 901, &err),
                         -TY_EBADSIG);
        assert_int_equal(sigv4_verify(&r, &a, BOTO_SECRET, BOTO_T0, &err), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite_header_form),
        cmocka_unit_test(test_suite_sign),
        cmocka_unit_test(test_suite_presigned),
        cmocka_unit_test(test_suite_presign),
        cmocka_unit_test(test_s3_doc_presigned),
        cmocka_unit_test(test_s3_doc_header_get),
        cmocka_unit_test(test_s3_doc_header_put),
        cmocka_unit_test(test_boto3_sagemaker),
        cmocka_unit_test(test_boto3_s3_presigned_key),
        cmocka_unit_test(test_boto3_s3_put),
        cmocka_unit_test(test_boto3_s3_date_header),
        cmocka_unit_test(test_boto3_sts_presigned_token),
        cmocka_unit_test(test_skew),
        cmocka_unit_test(test_missing_and_malformed),
        cmocka_unit_test(test_sign_errors),
        cmocka_unit_test(test_payload_hash_literal),
        cmocka_unit_test(test_canonical_encoding),
        cmocka_unit_test(test_hostile_input),
        cmocka_unit_test(test_key_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
