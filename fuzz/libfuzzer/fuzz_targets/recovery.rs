#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    stellmq_fuzz::recovery::recovery(data);
});
