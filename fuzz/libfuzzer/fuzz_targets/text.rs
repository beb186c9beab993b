#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    stellmq_fuzz::text::text(data);
});
