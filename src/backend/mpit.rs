//! The MPI tool interface (`MPI_T_*`): the control variables a library exposes, their enumerated
//! values, and reading and writing them. `coll-bench tune` finds each collective's algorithm
//! variable here and forces one algorithm at a time. All FFI of the tool interface stays here.

use crate::error::{Error, Result};
use mpi::ffi;
use std::os::raw::{c_char, c_int};

/// One control variable, as the library describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Cvar {
    pub index: c_int,
    pub name: String,
    pub description: String,
    /// The enumeration's items (value, name), when the library attaches one.
    pub items: Option<Vec<(i32, String)>>,
    /// One 4-byte value (the only kind `tune` reads and writes).
    pub is_int: bool,
    /// One `MPI_C_BOOL` (Open MPI's switches, such as `coll_tuned_use_dynamic_rules`).
    pub is_bool: bool,
}

/// The tool interface (after `MPI_Init`): see [`Tool::init`].
pub struct Tool {
    _private: (),
}

fn text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Tool {
    /// The tool interface, initialised once per process and never finalised: MPICH 4.0.2 crashes
    /// (a null pointer in `MPI_T_cvar_get_num`) when the interface is initialised again after
    /// `MPI_T_finalize`, which a second sweep in one process did (`check` with two rules, each
    /// reading the algorithm variables). Leaving it initialised at `MPI_Finalize` is allowed.
    pub fn init() -> Result<Tool> {
        static RC: std::sync::OnceLock<c_int> = std::sync::OnceLock::new();
        let rc = *RC.get_or_init(|| {
            let mut provided: c_int = 0;
            // SAFETY: plain out-parameter; called once per process.
            unsafe { ffi::MPI_T_init_thread(ffi::RSMPI_THREAD_SINGLE, &mut provided) }
        });
        if rc != 0 {
            return Err(Error::setup(format!(
                "the MPI library's tool interface (MPI_T_init_thread) failed with code {rc}"
            )));
        }
        Ok(Tool { _private: () })
    }

    /// Every control variable whose name `keep` accepts, with its description and enumeration.
    pub fn cvars(&self, keep: &dyn Fn(&str) -> bool) -> Vec<Cvar> {
        let mut n: c_int = 0;
        // SAFETY: out-parameters sized as passed; strings are NUL-terminated by the library.
        unsafe {
            if ffi::MPI_T_cvar_get_num(&mut n) != 0 {
                return vec![];
            }
            let mut out = vec![];
            for index in 0..n {
                let mut name = vec![0 as c_char; 256];
                let mut desc = vec![0 as c_char; 4096];
                let (mut name_len, mut desc_len) = (name.len() as c_int, desc.len() as c_int);
                // Scope and binding are not trusted: MPICH 4.0 leaves them unset; a write says.
                let (mut verbosity, mut bind, mut scope): (c_int, c_int, c_int) = (0, 0, -1);
                let mut dtype: ffi::MPI_Datatype = std::mem::zeroed();
                let mut enumtype: ffi::MPI_T_enum = std::ptr::null_mut();
                let rc = ffi::MPI_T_cvar_get_info(
                    index,
                    name.as_mut_ptr(),
                    &mut name_len,
                    &mut verbosity,
                    &mut dtype,
                    &mut enumtype,
                    desc.as_mut_ptr(),
                    &mut desc_len,
                    &mut bind,
                    &mut scope,
                );
                if rc != 0 {
                    continue;
                }
                let name = text(&name);
                if !keep(&name) {
                    continue;
                }
                let mut size: c_int = 0;
                let is_int = ffi::MPI_Type_size(dtype, &mut size) == 0 && size == 4;
                let is_bool = dtype == ffi::RSMPI_C_BOOL;
                let items = (!enumtype.is_null()).then(|| enum_items(enumtype));
                out.push(Cvar { index, name, description: text(&desc), items, is_int, is_bool });
            }
            out
        }
    }

    /// The current value of an integer variable.
    pub fn read(&self, var: &Cvar) -> Result<i32> {
        let mut value: [c_int; 4] = [0; 4];
        // SAFETY: `h` is a live handle of a one-integer variable (`with_handle` checks the count);
        // `value` holds four.
        self.with_handle(var, |h| unsafe { ffi::MPI_T_cvar_read(h, value.as_mut_ptr() as *mut _) }).map(|_| value[0])
    }

    /// The current value of a boolean variable (`None` where it is not one or reading fails).
    pub fn read_bool(&self, var: &Cvar) -> Option<bool> {
        if !var.is_bool {
            return None;
        }
        // SAFETY: a handle for a variable bound to no object, freed before returning; `value`
        // holds the one C `bool` (one byte) the variable is, with room to spare.
        unsafe {
            let mut h: ffi::MPI_T_cvar_handle = std::mem::zeroed();
            let mut count: c_int = 0;
            if ffi::MPI_T_cvar_handle_alloc(var.index, std::ptr::null_mut(), &mut h, &mut count) != 0 {
                return None;
            }
            let mut value = [0u8; 8];
            let rc = if count == 1 { ffi::MPI_T_cvar_read(h, value.as_mut_ptr() as *mut _) } else { -1 };
            ffi::MPI_T_cvar_handle_free(&mut h);
            (rc == 0).then_some(value[0] != 0)
        }
    }

    /// The current value of a string variable (`None` where it is not one or reading fails).
    pub fn read_text(&self, var: &Cvar) -> Option<String> {
        // SAFETY: a handle for a variable bound to no object, freed before returning; the buffer
        // holds the `count` characters the library says the variable has and a NUL (Open MPI
        // counts without it and copies it).
        unsafe {
            let mut h: ffi::MPI_T_cvar_handle = std::mem::zeroed();
            let mut count: c_int = 0;
            if ffi::MPI_T_cvar_handle_alloc(var.index, std::ptr::null_mut(), &mut h, &mut count) != 0 {
                return None;
            }
            let mut buf = vec![0 as c_char; count.max(0) as usize + 1];
            let rc = if count > 0 { ffi::MPI_T_cvar_read(h, buf.as_mut_ptr() as *mut _) } else { 0 };
            ffi::MPI_T_cvar_handle_free(&mut h);
            (rc == 0).then(|| text(&buf))
        }
    }

    /// Set an integer variable; the error names the library's refusal.
    pub fn write(&self, var: &Cvar, value: i32) -> Result<()> {
        let v: c_int = value;
        // SAFETY: `h` is a live handle of a one-integer variable; MPI only reads through the pointer.
        self.with_handle(var, |h| unsafe { ffi::MPI_T_cvar_write(h, &v as *const c_int as *mut _) })
    }

    fn with_handle(&self, var: &Cvar, f: impl FnOnce(ffi::MPI_T_cvar_handle) -> c_int) -> Result<()> {
        if !var.is_int {
            return Err(Error::setup(format!("{} is not a single integer; tune cannot set it", var.name)));
        }
        // SAFETY: a handle for a variable bound to no object; freed before returning.
        unsafe {
            let mut h: ffi::MPI_T_cvar_handle = std::mem::zeroed();
            let mut count: c_int = 0;
            let rc = ffi::MPI_T_cvar_handle_alloc(var.index, std::ptr::null_mut(), &mut h, &mut count);
            if rc != 0 {
                return Err(Error::setup(format!("{}: MPI_T_cvar_handle_alloc failed with code {rc}", var.name)));
            }
            let rc = if count == 1 { f(h) } else { -1 };
            let freed = ffi::MPI_T_cvar_handle_free(&mut h);
            match rc {
                0 if freed != 0 => {
                    Err(Error::setup(format!("{}: MPI_T_cvar_handle_free failed with code {freed}", var.name)))
                }
                0 => Ok(()),
                -1 => Err(Error::setup(format!("{} holds {count} values; tune sets single integers", var.name))),
                r if r == ffi::MPI_T_ERR_CVAR_SET_NEVER as c_int => {
                    Err(Error::setup(format!("{} cannot be set at run time (MPI_T_ERR_CVAR_SET_NEVER)", var.name)))
                }
                r if r == ffi::MPI_T_ERR_CVAR_SET_NOT_NOW as c_int => {
                    Err(Error::setup(format!("{} cannot be set now (MPI_T_ERR_CVAR_SET_NOT_NOW)", var.name)))
                }
                r => Err(Error::setup(format!("{}: reading or writing it failed with code {r}", var.name))),
            }
        }
    }
}

/// The items of an enumeration. SAFETY: `e` comes from `MPI_T_cvar_get_info`.
unsafe fn enum_items(e: ffi::MPI_T_enum) -> Vec<(i32, String)> {
    // SAFETY: the caller upholds this function's contract (its doc comment).
    unsafe {
        let mut num: c_int = 0;
        let mut name = vec![0 as c_char; 256];
        let mut len = name.len() as c_int;
        if ffi::MPI_T_enum_get_info(e, &mut num, name.as_mut_ptr(), &mut len) != 0 {
            return vec![];
        }
        let mut out = vec![];
        for i in 0..num {
            let mut value: c_int = 0;
            let mut item = vec![0 as c_char; 256];
            let mut len = item.len() as c_int;
            if ffi::MPI_T_enum_get_item(e, i, &mut value, item.as_mut_ptr(), &mut len) == 0 {
                out.push((value, text(&item)));
            }
        }
        out
    }
}
