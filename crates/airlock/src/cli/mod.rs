pub mod check;
pub mod doctor;
pub mod mcp;
pub mod policy;
pub mod run;
pub mod serve;
