use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
fn main() {
    for src in [
        gpu_reservoir::kernels::LIF,
        gpu_reservoir::kernels::ENCODING,
    ] {
        let options = CompileOptions {
            fmad: Some(false),
            options: vec!["--gpu-architecture=compute_90".to_string()],
            name: Some(src.name.to_string()),
            ..Default::default()
        };
        match compile_ptx_with_opts(src.text, options) {
            Ok(ptx) => {
                let text = ptx.to_src();
                std::fs::write(format!("/tmp/{}.ptx", src.name.replace('/', "_")), &text).unwrap();
                println!("{}: ok, {} bytes of PTX", src.name, text.len());
            }
            Err(e) => println!("{}: {e:?}", src.name),
        }
    }
}
